"""A one-line (or few-line) note in the conversation: info, a warning, an error, a turn summary."""

from __future__ import annotations

from typing import Literal

from rich.text import Text
from textual.widgets import Static

Kind = Literal["info", "warning", "error", "summary", "help"]


class NoticeLine(Static):
    DEFAULT_CSS = """
    NoticeLine {
        height: auto;
        padding: 0 1;
        color: $text-muted;
    }
    NoticeLine.-warning { color: $warning; }
    NoticeLine.-error { color: $error; text-style: bold; }
    NoticeLine.-summary { color: $text-disabled; text-align: right; }
    NoticeLine.-help { color: $text; background: $boost; margin: 1 0 0 0; }
    """

    def __init__(self, text: str, kind: Kind = "info") -> None:
        super().__init__(Text(text), classes=f"-{kind}")
        self.text = text
        self.kind = kind
