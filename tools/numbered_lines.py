"""Render lines `cat -n` style: right-aligned number, a tab, the line."""

from __future__ import annotations

from collections.abc import Sequence

NUMBER_WIDTH = 6
SNIPPET_CONTEXT_LINES = 4


def format_numbered(lines: Sequence[str], first_number: int = 1) -> str:
    return "\n".join(f"{number:>{NUMBER_WIDTH}}\t{line}" for number, line in enumerate(lines, start=first_number))


def snippet(lines: Sequence[str], first_line: int, last_line: int, context: int = SNIPPET_CONTEXT_LINES) -> str:
    """Numbered lines first_line..last_line (1-based, inclusive) plus some context around them."""
    start = max(1, first_line - context)
    end = min(len(lines), max(last_line, first_line) + context)
    if end < start:
        return "(file is empty)"
    return format_numbered(lines[start - 1 : end], start)
