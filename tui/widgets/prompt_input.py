"""The multi-line prompt: Enter sends, Shift+Enter or Ctrl+J adds a line, Up/Down walk the history."""

from __future__ import annotations

from textual import events
from textual.binding import Binding
from textual.widgets import TextArea

from tui import input_priority
from tui.messages import PromptSubmitted


class PromptInput(TextArea):
    DEFAULT_CSS = """
    PromptInput {
        height: auto;
        min-height: 3;
        max-height: 10;
        border: tall $accent;
        padding: 0 1;
    }
    PromptInput:disabled { border: tall $panel; }
    """

    # Shown in the footer; Enter and the history keys are handled in _on_key because TextArea
    # would otherwise consume them as text editing.
    BINDINGS = [
        Binding("enter", "submit", "Send", priority=False),
        Binding("ctrl+j", "newline", "New line", key_display="^j"),
        Binding("shift+enter", "newline", "New line", show=False),
    ]

    def __init__(self, *, id: str | None = None, placeholder: str = "") -> None:
        super().__init__(
            id=id,
            soft_wrap=True,
            show_line_numbers=False,
            tab_behavior="focus",
            placeholder=placeholder,
            compact=False,
        )
        self.prompt_history: list[str] = []
        # Where Up/Down are in the history; len(history) is the prompt being written.
        self._position = 0
        self._draft = ""

    async def _on_key(self, event: events.Key) -> None:
        input_priority.note_keypress()
        key = event.key
        if key == "enter":
            event.stop()
            event.prevent_default()
            self.action_submit()
            return
        if key in ("ctrl+j", "shift+enter"):
            event.stop()
            event.prevent_default()
            self.action_newline()
            return
        row, _ = self.cursor_location
        if key == "up" and row == 0 and self.prompt_history and self._position > 0:
            event.stop()
            event.prevent_default()
            self._recall(self._position - 1)
            return
        if key == "down" and row == self.document.line_count - 1 and self._position < len(self.prompt_history):
            event.stop()
            event.prevent_default()
            self._recall(self._position + 1)
            return
        await super()._on_key(event)

    def action_newline(self) -> None:
        start, end = self.selection
        self.replace("\n", start, end, maintain_selection_offset=False)

    def action_submit(self) -> None:
        text = self.text
        if not text.strip():
            return
        if not self.prompt_history or self.prompt_history[-1] != text:
            self.prompt_history.append(text)
        self._position = len(self.prompt_history)
        self._draft = ""
        self.clear()
        self.post_message(PromptSubmitted(text))

    def _recall(self, position: int) -> None:
        if self._position == len(self.prompt_history):
            self._draft = self.text  # keep what was being written, as shells do
        self._position = position
        self.text = self._draft if position == len(self.prompt_history) else self.prompt_history[position]
        self.move_cursor(self.document.end)

    def remember(self, entries: list[str]) -> None:
        """Seed the history (e.g. with the prompts of a resumed session)."""
        self.prompt_history = [*entries, *self.prompt_history]
        self._position = len(self.prompt_history)
