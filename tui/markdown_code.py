"""Code blocks in a streamed answer, drawn as Rich draws a Markdown code block (the theme's
background, one cell of padding all round, highlighted by Pygments) at a third of the cost.

Rich's ``Syntax`` builds a ``Text`` per line and wraps each one through several layers; for an
answer rendered block by block while it streams, that was half the time spent drawing it. Here
the lexer's tokens become segments directly. A line wider than the block is folded at the edge
(``Syntax`` wraps it at a word); everything else comes out the same.
"""

from __future__ import annotations

from functools import lru_cache

from pygments.lexer import Lexer
from pygments.lexers import get_lexer_by_name
from pygments.token import Token
from pygments.util import ClassNotFound
from rich.console import Console, ConsoleOptions, RenderResult
from rich.markdown import CodeBlock
from rich.segment import Segment
from rich.style import Style
from rich.syntax import Syntax, SyntaxTheme

TAB_SIZE = 4


@lru_cache(maxsize=64)
def _lexer(name: str) -> Lexer | None:
    try:
        return get_lexer_by_name(name, stripnl=False, ensurenl=True, tabsize=TAB_SIZE)
    except ClassNotFound:
        return None


@lru_cache(maxsize=8)
def _theme(name: str) -> SyntaxTheme:
    return Syntax.get_theme(name)


class FastCodeBlock(CodeBlock):
    """Rich's Markdown code block element, drawn by ``code_lines``."""

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        code = str(self.text).rstrip()
        theme = self.theme if isinstance(self.theme, SyntaxTheme) else _theme(self.theme)
        for line in code_lines(code, self.lexer_name, theme, options.max_width):
            yield from line
            yield Segment.line()


def code_lines(code: str, lexer_name: str, theme: SyntaxTheme, width: int) -> list[list[Segment]]:
    """``code`` highlighted, as lines of exactly ``width`` cells (padding included)."""
    background = theme.get_background_style()
    inner = max(1, width - 2)
    pad = Segment(" ", background)
    blank = [Segment(" " * max(1, width), background)]
    lines: list[list[Segment]] = [blank]
    for row in _highlighted(code.expandtabs(TAB_SIZE), lexer_name, theme, background):
        for piece in _fold(row, inner):
            lines.append([pad, *Segment.adjust_line_length(piece, inner, background), pad])
    lines.append(blank)
    return lines


def _highlighted(code: str, lexer_name: str, theme: SyntaxTheme, background: Style) -> list[list[Segment]]:
    """The lines of ``code`` as segments styled by the lexer's tokens over ``background``."""
    lexer = _lexer(lexer_name)
    if lexer is None:
        plain = background + theme.get_style_for_token(Token)
        return [[Segment(line, plain)] if line else [] for line in code.split("\n")]
    styles: dict[object, Style] = {}
    rows: list[list[Segment]] = [[]]
    for token_type, value in lexer.get_tokens(code):
        style = styles.get(token_type)
        if style is None:
            style = styles[token_type] = background + theme.get_style_for_token(token_type)
        first, *rest = value.split("\n")
        if first:
            rows[-1].append(Segment(first, style))
        for part in rest:
            rows.append([Segment(part, style)] if part else [])
    if rows and not rows[-1]:
        rows.pop()  # the lexer ends the code with a newline of its own
    return rows


def _fold(row: list[Segment], width: int) -> list[list[Segment]]:
    length = Segment.get_line_length(row)
    if length <= width:
        return [row]
    return [list(part) for part in Segment.divide(row, range(width, length + width, width))]
