"""What the user typed, as sent."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static


class UserMessage(Static):
    DEFAULT_CSS = """
    UserMessage {
        height: auto;
        margin: 1 0 0 0;
        padding: 0 1;
        border-left: thick $accent;
        background: $boost;
    }
    """

    def __init__(self, text: str) -> None:
        # A Text, not markup: the user's brackets must show as typed.
        super().__init__(Text(text))
        self.text = text
