"""Markdown drawn with the line API, cheap to grow: an answer streamed at thousands of tokens a second.

Textual lays out every widget on each layout pass, and its Markdown widget is a widget per block,
re-parsed and re-measured as text arrives; at a fast stream that work alone fills the event loop
and the echo of the user's keys waits behind it. A ``MarkdownLines`` instead draws a run of
finished top-level blocks (``tui.markdown_blocks``), each rendered by Rich once per width and kept
as lines, and after them the open block, rendered again when it grows.

An answer is a column of these (``AssistantMessage``): only the last one grows. A widget whose
size changes is repainted whole, one whose size stays is drawn from its cached lines; so the
finished part of a long answer costs nothing per frame.

The text can be selected with the mouse like other widgets' text.
"""

from __future__ import annotations

import copy
import threading
from dataclasses import dataclass, field
from typing import ClassVar

from markdown_it import MarkdownIt
from rich.console import Console
from rich.markdown import Markdown as RichMarkdown
from rich.markdown import MarkdownElement
from rich.segment import Segment
from rich.style import Style
from textual.geometry import Size
from textual.selection import Selection
from textual.strip import Strip
from textual.widget import Widget

from tui.markdown_code import FastCodeBlock

# Layout may ask for a few widths (with and without a scrollbar, say): keep the lines of these.
WIDTHS_KEPT = 3

# Rich builds a Markdown parser for every document, which costs as much as parsing a paragraph;
# blocks are rendered one by one, so they share one (and a template for the other settings).
_PARSER = MarkdownIt().enable("strikethrough").enable("table")


class AnswerMarkdown(RichMarkdown):
    """Rich's Markdown with its code blocks drawn by ``tui.markdown_code``."""

    elements: ClassVar[dict[str, type[MarkdownElement]]] = {
        **RichMarkdown.elements,
        "fence": FastCodeBlock,
        "code_block": FastCodeBlock,
    }


_TEMPLATE = AnswerMarkdown("", code_theme="monokai", hyperlinks=False)


def rich_markdown(markdown: str) -> RichMarkdown:
    document = copy.copy(_TEMPLATE)
    document.markup = markdown
    document.parsed = _PARSER.parse(markdown)
    return document


# What the first code block of a session would otherwise pay for in the middle of a stream (tens
# of milliseconds: the highlighter's modules and the language's rules), for a few common languages.
_WARM_UP = "".join(f"```{language}\nx\n```\n\n" for language in ("python", "bash", "json", "diff", "javascript"))
_warmed = threading.Event()


def warm_up_in_background() -> None:
    """Render a few code blocks off the event loop, once per process (its own console: nothing is
    shared with the app's)."""
    if _warmed.is_set():
        return
    _warmed.set()

    def warm() -> None:
        console = Console(width=80, force_terminal=True, color_system="truecolor")
        console.render_lines(RichMarkdown(_WARM_UP), console.options)

    threading.Thread(target=warm, name="markdown-warm-up", daemon=True).start()


@dataclass
class _Lines:
    """The lines at one width: the finished blocks' (grown block by block), then the open block's."""

    blocks: int = 0
    finished: list[Strip] = field(default_factory=list)
    tail_source: str = ""
    tail: list[Strip] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.finished) + len(self.tail)

    def line(self, y: int) -> Strip | None:
        if y < len(self.finished):
            return self.finished[y]
        y -= len(self.finished)
        return self.tail[y] if y < len(self.tail) else None


class MarkdownLines(Widget):
    DEFAULT_CSS = """
    MarkdownLines {
        height: auto;
    }
    """

    def __init__(
        self,
        blocks: list[str] | None = None,
        tail: str = "",
        *,
        after: MarkdownLines | None = None,
    ) -> None:
        super().__init__()
        self.blocks: list[str] = list(blocks or [])
        self.finished_chars = sum(map(len, self.blocks))
        self.tail = tail
        # Following another one: a blank line above the first block, and until its own first
        # layout it renders at that one's width and style (the next layout then finds it ready).
        self.gap_before = after is not None
        self._width_hint = after.size.width if after is not None else 0
        self._base_hint = after.rich_style if after is not None and after.size.width else None
        self._widths: dict[int, _Lines] = {}
        self._base_style: Style | None = None
        # Lines made ahead by ``prepare``, by (width, Markdown), one per piece: taken as it is added.
        self._prepared: dict[tuple[int, str], list[list[Strip]]] = {}

    @property
    def source(self) -> str:
        """The Markdown this widget holds."""
        return "".join(self.blocks) + self.tail

    @property
    def render_width(self) -> int:
        return self.size.width or self._width_hint

    def prepare(self, markdown: str) -> None:
        """Render ``markdown`` (a block about to be added, or the next open block) now, so that
        ``extend`` finds its lines made: a batch can be rendered a piece at a time, keys between."""
        width = self.render_width
        if not width or not markdown.strip():
            return
        shown = self._widths.get(width)
        if shown is not None and shown.tail and markdown.rstrip() == shown.tail_source.rstrip():
            return  # the open block, complete already: its lines are there
        self._prepared.setdefault((width, markdown), []).append(self._render_lines(markdown, width, self._base()))

    def extend(self, blocks: list[str], tail: str) -> None:
        """Add finished ``blocks`` and make ``tail`` the open block, rendering what changed (and was
        not prepared) at the width laid out last; a layout only if the height changed."""
        if not blocks and tail == self.tail:
            return
        width = self.render_width
        before = len(self._lines(width)) if width else -1
        self.blocks.extend(blocks)
        self.finished_chars += sum(map(len, blocks))
        self.tail = tail
        after = len(self._lines(width)) if width else -2
        self._prepared.clear()
        self.refresh(layout=after != before)

    # -- rendering -------------------------------------------------------------------------------

    def _base(self) -> Style:
        # Looked up once: the widget's style is recomputed after every refresh, and is asked for
        # with every block rendered.
        if self._base_style is None:
            self._base_style = self._base_hint if self._base_hint is not None else self.rich_style
        return self._base_style

    def notify_style_update(self) -> None:
        super().notify_style_update()
        # A new theme, say: what was rendered carries the old colours.
        if self._base_style is not None and self.is_mounted and self.rich_style != self._base_style:
            self._base_style = self._base_hint = None
            self._widths.clear()
            self.refresh(layout=True)

    def _lines(self, width: int) -> _Lines:
        lines = self._widths.get(width)
        if lines is None:
            if len(self._widths) >= WIDTHS_KEPT:
                self._widths.clear()
            lines = self._widths[width] = _Lines()
        if lines.blocks == len(self.blocks) and lines.tail_source == self.tail:
            return lines
        base = self._base()
        for block in self.blocks[lines.blocks :]:
            if lines.tail and block.rstrip() == lines.tail_source.rstrip():
                # The open block was complete already: its lines (and the gap above) are these.
                lines.finished.extend(lines.tail)
                lines.tail_source, lines.tail = "", []
            else:
                if lines.finished or self.gap_before:
                    # The gap between two blocks.
                    lines.finished.append(Strip.blank(width, base))
                lines.finished.extend(self._made(block, width, base))
            lines.blocks += 1
        if lines.tail_source != self.tail:
            lines.tail_source = self.tail
            tail = self._made(self.tail, width, base) if self.tail.strip() else []
            lines.tail = [Strip.blank(width, base), *tail] if tail and (lines.finished or self.gap_before) else tail
        return lines

    def _made(self, markdown: str, width: int, base: Style) -> list[Strip]:
        prepared = self._prepared.get((width, markdown))
        return prepared.pop() if prepared else self._render_lines(markdown, width, base)

    def _render_lines(self, markdown: str, width: int, base: Style) -> list[Strip]:
        console = self.app.console
        options = console.options.update_width(max(1, width))
        rendered = console.render_lines(rich_markdown(markdown), options, pad=True)
        return [Strip(Segment.adjust_line_length(line, width), width).apply_style(base).simplify() for line in rendered]

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return len(self._lines(width))

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        line = self._lines(width).line(y)
        if line is None:
            return Strip.blank(width, self.rich_style)
        selection = self.text_selection
        if selection is not None and (span := selection.get_span(y)) is not None:
            line = _highlight(line, span, self.screen.get_component_rich_style("screen--selection"))
        return line.apply_offsets(0, y)

    # -- selection ---------------------------------------------------------------------------------

    def get_selection(self, selection: Selection) -> tuple[str, str] | None:
        width = self.render_width
        if not width:
            return None  # not laid out yet: nothing drawn to select
        lines = self._lines(width)
        text = "\n".join(line.text.rstrip() for line in (*lines.finished, *lines.tail))
        return selection.extract(text), "\n"

    def selection_updated(self, selection: Selection | None) -> None:
        self.refresh()


def _highlight(line: Strip, span: tuple[int, int], style: Style) -> Strip:
    start, end = span
    end = line.cell_length if end == -1 else min(end, line.cell_length)
    if end <= start:
        return line
    return Strip.join([line.crop(0, start), line.crop(start, end).apply_style(style), line.crop(end)])
