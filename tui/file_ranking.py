"""Rank workspace paths for the ``@`` file picker against what has been typed.

Paths holding the typed characters in order (fzf's rule: "chpy" finds ``tui/screens/chat.py``)
come first, scored by rapidfuzz with a bonus when the file's own name matches; when none does, a
plain rapidfuzz ranking still forgives a typo. Ties go to the shorter path.
"""

from __future__ import annotations

import re

from rapidfuzz import fuzz, process, utils

DEFAULT_LIMIT = 50
# When no path holds the typed characters in order, a hit must score at least this (of 100).
FALLBACK_CUTOFF = 40.0


def _in_order(query: str) -> re.Pattern[str]:
    return re.compile(".*?".join(re.escape(ch) for ch in query), re.IGNORECASE)


def _bonus(query: str, path: str) -> float:
    name = path.rsplit("/", 1)[-1].lower()
    q = query.lower()
    if name == q:
        return 40.0
    if name.startswith(q):
        return 30.0
    if q in name:
        return 20.0
    if q in path.lower():
        return 10.0
    return 0.0


def rank_paths(query: str, paths: list[str], limit: int = DEFAULT_LIMIT) -> list[str]:
    """The best `limit` of `paths` for `query`; the first `limit` as they are for an empty query."""
    query = query.strip()
    if not query:
        return paths[:limit]
    pattern = _in_order(query)
    candidates = [path for path in paths if pattern.search(path)]
    if not candidates:
        hits = process.extract(
            query, paths, scorer=fuzz.WRatio, processor=utils.default_process, limit=limit, score_cutoff=FALLBACK_CUTOFF
        )
        return [path for path, _, _ in hits]
    hits = process.extract(query, candidates, scorer=fuzz.WRatio, processor=utils.default_process, limit=None)
    scored = sorted(hits, key=lambda hit: (-(hit[1] + _bonus(query, hit[0])), len(hit[0]), hit[0]))
    return [path for path, _, _ in scored[:limit]]
