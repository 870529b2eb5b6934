"""Whether a grep or glob call would read files that a deny or ask rule covers.

A deny or ask rule on paths for one reading tool (`view(secret/**)`) is a rule on reading those
paths, so it holds for grep and glob too. A search over a directory that holds files such a rule
covers asks (the search would read them), unless none of the files it would read there is
covered; finding out walks the directory, as far as a rule could reach and no further.
"""

from __future__ import annotations

import os
import posixpath

from agent.permissions.call_view import CallView, Search
from agent.permissions.rules import PermissionRules, Rule
from agent.permissions.wildcards import Wildcard, glob_pattern, path_pattern
from tools.file_listing import ALWAYS_SKIPPED_DIRS

__all__ = ["prefix_below", "search_reaches"]

# A search checks at most this many entries for covered files before it gives up and asks.
_SEARCH_CHECK_LIMIT = 20_000
# A rule's pattern and where it stands (its set of states) after a path.
_Forms = list[tuple[Wildcard, frozenset[int]]]


def search_reaches(rules: PermissionRules, call: CallView) -> str | None:
    """Why a grep or glob call needs approval: it would read files that a deny or ask rule covers."""
    target = call.path
    if target is None:
        return None
    restricting = rules.restricting_patterns(call.tool_name)
    if not restricting:
        return None
    # The rules that could cover something below the path at all, as written or where it lands,
    # each with where its pattern stands after that path.
    candidates: list[tuple[Rule, _Forms]] = []
    for rule in restricting:
        pattern = path_pattern(rule.pattern or "")
        starts = (pattern.advance(pattern.start, prefix_below(base)) for base in target.spellings)
        forms = [(pattern, at) for at in starts if at]
        if forms:
            candidates.append((rule, forms))
    if not candidates:
        return None
    where = target.resolved or target.written
    if call.workspace is None or target.resolved is None:
        if call.workspace is not None:
            # It lands outside the workspace, where the tool refuses to search.
            return None
        rule = candidates[0][0]
        return f"{call.tool_name} searches {where}, where rule {rule.text} may cover files it would read"
    root = os.path.realpath(call.workspace)
    base = root if target.resolved == "." else os.path.join(root, target.resolved)
    if not os.path.isdir(base):
        # A file is judged by its own path (above); a path that is not there fails in the tool.
        return None
    found = _covered_file(base, call.search or Search(), candidates)
    if found is None:
        return None
    rule, example = found
    if example is None:
        return (
            f"{call.tool_name} searches {where}, which holds more than {_SEARCH_CHECK_LIMIT} entries; "
            f"rule {rule.text} may cover some it would read"
        )
    shown = posixpath.join(target.resolved, example) if target.resolved != "." else example
    return f"{call.tool_name} searches {where}, which holds {shown}, covered by rule {rule.text}"


def prefix_below(base: str) -> str:
    """The start of every path below `base` (the workspace itself for ".")."""
    return "" if base == "." else base.rstrip("/") + "/"


def _covered_file(base: str, search: Search, candidates: list[tuple[Rule, _Forms]]) -> tuple[Rule, str | None] | None:
    """A file below `base` the search would read and a rule covers: (rule, its path below base).

    The walk is the tools' own listing, widened: symlinks are not followed (the tools neither
    list nor follow them) but are checked by name, and nothing is skipped for .gitignore. A
    directory no rule (or no part of the search's glob) can reach below is not entered. After
    `_SEARCH_CHECK_LIMIT` entries the answer is (rule, None): it cannot tell.
    """
    glob = glob_pattern(search.path_glob) if search.path_glob is not None else None
    stack: list[tuple[str, str, list[tuple[Rule, _Forms]], frozenset[int] | None]] = [
        (base, "", candidates, glob.start if glob is not None else None)
    ]
    seen = 0
    while stack:
        directory, below, live, globbed = stack.pop()
        try:
            with os.scandir(directory) as entries:
                listed = sorted(entries, key=lambda entry: entry.name)
        except OSError:
            continue
        for entry in listed:
            seen += 1
            if seen > _SEARCH_CHECK_LIMIT:
                return live[0][0], None
            name = entry.name
            try:
                is_directory = entry.is_dir(follow_symlinks=False)
            except OSError:
                is_directory = False
            if is_directory:
                if name in ALWAYS_SKIPPED_DIRS:
                    continue
                inner = glob.advance(globbed, name + "/") if glob is not None and globbed is not None else None
                if glob is not None and not inner:
                    continue
                deeper = [
                    (rule, kept)
                    for rule, forms in live
                    if (kept := [(p, moved) for p, states in forms if (moved := p.advance(states, name + "/"))])
                ]
                if deeper:
                    stack.append((entry.path, below + name + "/", deeper, inner))
                continue
            if not search.lets_through(name, globbed):
                continue
            for rule, forms in live:
                if any(p.accepts(p.advance(states, name)) for p, states in forms):
                    return rule, below + name
    return None
