"""Markdown that will not change any more, drawn by one widget instead of one widget per block.

Textual lays out every widget on each layout pass, so an answer made of hundreds of Markdown block
widgets makes every pass slower. Finished, older parts of an answer are handed to this single
widget: Rich renders the Markdown once per width into cached lines, drawn with the line API.
"""

from __future__ import annotations

from rich.markdown import Markdown as RichMarkdown
from rich.segment import Segment
from textual.geometry import Size
from textual.strip import Strip
from textual.widget import Widget


class SealedMarkdown(Widget):
    DEFAULT_CSS = """
    SealedMarkdown {
        height: auto;
    }
    """

    def __init__(self, markdown: str) -> None:
        super().__init__()
        self.source = markdown
        # Layout asks for more than one width (with and without a scrollbar, say): keep a few.
        self._cache: dict[int, list[Strip]] = {}

    def _lines(self, width: int) -> list[Strip]:
        cached = self._cache.get(width)
        if cached is not None:
            return cached
        console = self.app.console
        options = console.options.update_width(max(1, width))
        rendered = console.render_lines(
            RichMarkdown(self.source, code_theme="monokai", hyperlinks=False), options, pad=True
        )
        # Rich ends a document with its last block; the blank line keeps the gap Markdown blocks have.
        strips = [Strip(Segment.adjust_line_length(line, width), width) for line in rendered]
        strips.append(Strip.blank(width))
        if len(self._cache) >= 4:
            self._cache.clear()
        self._cache[width] = strips
        return strips

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return len(self._lines(width))

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        lines = self._lines(width)
        return lines[y] if 0 <= y < len(lines) else Strip.blank(width)
