"""Shorten long command output to its head and tail, which is where the useful parts usually are."""

from __future__ import annotations

from dataclasses import dataclass

MAX_OUTPUT_CHARS = 30_000
MAX_OUTPUT_LINES = 400


@dataclass(frozen=True)
class HeadAndTail:
    head: str
    tail: str
    cut_lines: int
    cut_chars: int


def cut_middle(text: str, max_chars: int = MAX_OUTPUT_CHARS, max_lines: int = MAX_OUTPUT_LINES) -> HeadAndTail | None:
    """None when `text` fits; otherwise the kept head and tail and how much was cut between."""
    line_count = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
    if len(text) <= max_chars and line_count <= max_lines:
        return None
    head_end = _head_end(text, max_chars // 2, max_lines // 2)
    tail_start = max(head_end, _tail_start(text, max_chars - max_chars // 2, max_lines - max_lines // 2))
    removed = text[head_end:tail_start]
    return HeadAndTail(
        head=text[:head_end],
        tail=text[tail_start:],
        cut_lines=removed.count("\n"),
        cut_chars=len(removed),
    )


def _head_end(text: str, char_budget: int, line_budget: int) -> int:
    end = min(len(text), char_budget)
    newline_at = -1
    for _ in range(line_budget):
        newline_at = text.find("\n", newline_at + 1, end)
        if newline_at < 0:
            break
    else:
        return newline_at + 1
    # Fewer lines than the budget fit: end at the last whole line, unless one huge line
    # fills the budget on its own, in which case it is cut mid-line.
    last_newline = text.rfind("\n", 0, end)
    return last_newline + 1 if last_newline >= 0 else end


def _tail_start(text: str, char_budget: int, line_budget: int) -> int:
    start = max(0, len(text) - char_budget)
    # A trailing newline closes the last line rather than starting a new one.
    search_end = len(text) - 1 if text.endswith("\n") else len(text)
    newline_at = search_end
    for _ in range(line_budget):
        newline_at = text.rfind("\n", start, newline_at)
        if newline_at < 0:
            break
    else:
        return newline_at + 1
    first_newline = text.find("\n", start, search_end)
    if start == 0:
        return 0
    return first_newline + 1 if first_newline >= 0 else start
