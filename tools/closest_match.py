"""Find the lines of a file most similar to text the model expected to find there."""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from tools.text_files import split_lines

# Sliding a window over enormous files would stall the agent for little benefit.
MAX_LINES_SEARCHED = 50_000


@dataclass(frozen=True)
class ClosestLines:
    first_line: int  # 1-based
    lines: list[str]
    similarity: float


def find_closest_lines(file_text: str, wanted: str) -> ClosestLines | None:
    """The window of file lines (as many as `wanted` has) that best matches `wanted`."""
    file_lines = split_lines(file_text)[:MAX_LINES_SEARCHED]
    wanted_lines = split_lines(wanted) or [wanted]
    if not file_lines:
        return None
    window = min(len(wanted_lines), len(file_lines))
    target = "\n".join(wanted_lines)
    matcher = difflib.SequenceMatcher(autojunk=False)
    # SequenceMatcher caches its analysis of seq2, so the fixed target goes there.
    matcher.set_seq2(target)
    best_start, best_ratio = 0, -1.0
    for start in range(len(file_lines) - window + 1):
        matcher.set_seq1("\n".join(file_lines[start : start + window]))
        if matcher.real_quick_ratio() <= best_ratio or matcher.quick_ratio() <= best_ratio:
            continue
        ratio = matcher.ratio()
        if ratio > best_ratio:
            best_start, best_ratio = start, ratio
    return ClosestLines(best_start + 1, file_lines[best_start : best_start + window], best_ratio)
