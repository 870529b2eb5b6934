"""The model's reasoning, in a block that is collapsed unless the user opens it."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Collapsible, Static

# Reasoning arrives token by token; repainting a long block per token would be quadratic.
REPAINT_EVERY_S = 1 / 15


def _heading(text: str, done: bool) -> str:
    words = len(text.split())
    return f"reasoning · {words} words" if done else f"reasoning… {words} words"


class ReasoningBlock(Collapsible):
    DEFAULT_CSS = """
    ReasoningBlock {
        height: auto;
        margin: 1 0 0 0;
        padding: 0;
        border: none;
        background: transparent;
    }
    ReasoningBlock > Contents { padding: 0 0 0 2; }
    /* The title grows as words arrive; a fixed width never clips it. */
    ReasoningBlock > CollapsibleTitle { width: 100%; }
    ReasoningBlock .reasoning-text { color: $text-muted; text-style: italic; }
    """

    def __init__(self, text: str = "", *, collapsed: bool = True) -> None:
        self._body = Static(Text(text), classes="reasoning-text")
        super().__init__(self._body, title=_heading(text, done=bool(text)), collapsed=collapsed)
        self.text = text
        self.done = bool(text)
        self._dirty = False

    def append(self, fragment: str) -> None:
        self.text += fragment
        if not self._dirty:
            self._dirty = True
            self.set_timer(REPAINT_EVERY_S, self._repaint)

    def finish(self) -> None:
        self.done = True
        self._repaint()

    def _repaint(self) -> None:
        self._dirty = False
        self.title = _heading(self.text, self.done)
        self._body.update(Text(self.text))
