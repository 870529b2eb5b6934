"""What the user typed, as sent."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from tui.widgets.entry import entry_css


class UserMessage(Static):
    DEFAULT_CSS = entry_css("UserMessage", border_left="thick $accent", background="$boost")

    def __init__(self, text: str) -> None:
        # A Text, not markup: the user's brackets must show as typed.
        super().__init__(Text(text))
        self.text = text
