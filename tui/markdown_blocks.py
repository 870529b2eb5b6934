"""Where streamed Markdown may be cut into finished top-level blocks.

An answer arrives a few characters at a time. Drawing it stays cheap when every block that is
complete is rendered once and only the open block at the end is rendered again as it grows. A
block is complete once a blank line outside any code fence has been followed by the first
character of a line that starts at the margin: an indented line after a blank one still belongs
to the block before it (a list item's second paragraph, code indented in a list item).
"""

from __future__ import annotations

import re

# An opening or closing code fence: up to three spaces, then three or more backticks or tildes.
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")


def block_cuts(text: str) -> list[int]:
    """Offsets in ``text`` (which starts outside any code fence) at which a finished block ends
    and the next one begins; the pieces between them, and after the last, join back to ``text``."""
    cuts: list[int] = []
    fence: str | None = None
    blank_before = content_before = False
    start = 0
    while start < len(text):
        end = text.find("\n", start)
        end = len(text) if end == -1 else end + 1
        line = text[start:end]
        if fence is None and blank_before and content_before and not line[0].isspace():
            cuts.append(start)
            content_before = False
        blank_before = not line.strip()
        content_before = content_before or not blank_before
        fence = _fence_after(line, fence)
        start = end
    return cuts


def _fence_after(line: str, fence: str | None) -> str | None:
    """The code fence open after ``line`` (its marker), given the one open before it."""
    match = _FENCE.match(line)
    if match is None:
        return fence
    marker = match.group(1)
    if fence is None:
        return marker
    closes = marker[0] == fence[0] and len(marker) >= len(fence) and not line[match.end() :].strip()
    return None if closes else fence


def split_blocks(text: str) -> tuple[list[str], str]:
    """``text`` as its finished blocks and the open block after them (maybe empty)."""
    cuts = block_cuts(text)
    bounds = [0, *cuts]
    finished = [text[a:b] for a, b in zip(bounds, cuts, strict=False)]  # bounds has one more
    return finished, text[bounds[-1] :]
