"""Find the lines of a file most similar to text the model expected to find there."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tools.text_files import split_lines

# Sliding a window over enormous files would stall the agent for little benefit.
MAX_LINES_SEARCHED = 50_000
# Lines of old_string compared against every file line to rank windows cheaply.
MAX_PROBE_LINES = 48
# Best-ranked windows then compared as whole text; fewer when the text is long, since one
# comparison costs about the product of the two lengths.
MAX_REFINED_WINDOWS = 24
REFINE_BUDGET = 40_000_000


@dataclass(frozen=True)
class ClosestLines:
    first_line: int  # 1-based
    lines: list[str]
    similarity: float


def find_closest_lines(file_text: str, wanted: str) -> ClosestLines | None:
    """The window of file lines (as many as `wanted` has) that best matches `wanted`.

    Every window is ranked by how alike its lines are to the wanted lines at the same
    positions (rapidfuzz, all pairs at once); the best few are then compared as whole text
    and the most similar wins. This takes milliseconds where comparing every window as text
    took tens of seconds on large files.
    """
    # Imported on first use: numpy and rapidfuzz take ~0.2 s to load, which every agent
    # start would otherwise pay for a search that runs only after a failed edit.
    from rapidfuzz import fuzz

    file_lines = split_lines(file_text)[:MAX_LINES_SEARCHED]
    wanted_lines = split_lines(wanted) or [wanted]
    if not file_lines:
        return None
    window = min(len(wanted_lines), len(file_lines))
    target = "\n".join(wanted_lines)
    starts = _ranked_starts(file_lines, wanted_lines[:window], window, _refined_count(len(target)))
    best_start, best_score = starts[0], -1.0
    for start in sorted(starts):
        score = fuzz.ratio(target, "\n".join(file_lines[start : start + window]))
        if score > best_score:
            best_start, best_score = start, score
    return ClosestLines(best_start + 1, file_lines[best_start : best_start + window], best_score / 100)


def _ranked_starts(file_lines: Sequence[str], wanted_lines: Sequence[str], window: int, keep: int) -> list[int]:
    """Window starts, best first, scored by per-line similarity along the diagonal."""
    import numpy as np
    from rapidfuzz import fuzz, process

    start_count = len(file_lines) - window + 1
    if start_count <= keep:
        return list(range(start_count))
    offsets = _probe_offsets(window)
    # Each distinct file line is compared once; repeated lines (blank, braces) share a column.
    distinct = list(dict.fromkeys(file_lines))
    column_of = {line: index for index, line in enumerate(distinct)}
    columns = np.fromiter((column_of[line] for line in file_lines), dtype=np.int64, count=len(file_lines))
    probes = [wanted_lines[offset] for offset in offsets]
    similarity = process.cdist(probes, distinct, scorer=fuzz.ratio, dtype=np.float32)
    scores = np.zeros(start_count, dtype=np.float64)
    for row, offset in enumerate(offsets):
        # Longer lines say more about a match than blank lines or a lone brace.
        weight = len(probes[row]) + 1
        scores += weight * similarity[row, columns[offset : offset + start_count]]
    best = np.argpartition(-scores, keep - 1)[:keep]
    return [int(start) for start in best[np.argsort(-scores[best], kind="stable")]]


def _probe_offsets(window: int) -> list[int]:
    if window <= MAX_PROBE_LINES:
        return list(range(window))
    return sorted({round(i * (window - 1) / (MAX_PROBE_LINES - 1)) for i in range(MAX_PROBE_LINES)})


def _refined_count(target_chars: int) -> int:
    cost = max(target_chars, 1) ** 2 // 64
    return max(2, min(MAX_REFINED_WINDOWS, REFINE_BUDGET // max(cost, 1)))
