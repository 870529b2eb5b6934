"""A unified diff, coloured line by line."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

# Past this many lines the rest is summarised: a diff of a generated file should not bury the chat.
MAX_LINES = 400


def render_diff(diff: str, max_lines: int = MAX_LINES) -> Text:
    text = Text(no_wrap=False, overflow="fold")
    lines = diff.rstrip("\n").splitlines()
    for line in lines[:max_lines]:
        if line.startswith(("+++", "---")):
            style = "bold"
        elif line.startswith("@@"):
            style = "cyan"
        elif line.startswith("+"):
            style = "green"
        elif line.startswith("-"):
            style = "red"
        else:
            style = "dim"
        text.append(line + "\n", style=style)
    if len(lines) > max_lines:
        text.append(f"… {len(lines) - max_lines} more lines\n", style="italic dim")
    text.rstrip()
    return text


class DiffView(Static):
    DEFAULT_CSS = """
    DiffView {
        height: auto;
        padding: 0 1;
        background: $surface-darken-1;
    }
    """

    def __init__(self, diff: str, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(render_diff(diff), id=id, classes=classes)
        self.diff = diff
