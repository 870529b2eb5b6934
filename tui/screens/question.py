"""A modal that asks one question about a request: a key or a button answers, and the answer is
what the screen is dismissed with (what ``push_screen_wait`` returns)."""

from __future__ import annotations

from typing import Any, ClassVar, Generic, TypeVar

from textual.screen import ModalScreen
from textual.widgets import Button

RequestT = TypeVar("RequestT")
AnswerT = TypeVar("AnswerT")


class QuestionScreen(ModalScreen[AnswerT], Generic[RequestT, AnswerT]):
    # The answer each button gives, by the button's id; keys answer through ``action_answer``.
    ANSWERS: ClassVar[dict[str, Any]] = {}

    def __init__(self, request: RequestT) -> None:
        super().__init__()
        self.request = request

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id in self.ANSWERS:
            self.dismiss(self.ANSWERS[event.button.id])

    def action_answer(self, answer: AnswerT) -> None:
        self.dismiss(answer)
