"""Translate glob patterns with `**` into regular expressions over POSIX relative paths."""

from __future__ import annotations

import re
from functools import lru_cache


def glob_to_regex_source(pattern: str) -> str:
    """`*` and `?` stay within one path segment; `**/` spans zero or more directories."""
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        if pattern.startswith("**/", i):
            out.append("(?:[^/]*/)*")
            i += 3
        elif pattern.startswith("**", i) and i + 2 == n:
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            while i < n and pattern[i] == "*":
                i += 1
            out.append("[^/]*")
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[":
            end = _class_end(pattern, i)
            if end < 0:
                out.append(re.escape("["))
                i += 1
            else:
                out.append(_translate_class(pattern[i + 1 : end]))
                i = end + 1
        elif pattern[i] == "\\" and i + 1 < n:
            out.append(re.escape(pattern[i + 1]))
            i += 2
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return "".join(out)


@lru_cache(maxsize=256)
def compile_glob(pattern: str) -> re.Pattern[str]:
    return re.compile(glob_to_regex_source(pattern) + r"\Z", re.DOTALL)


def _class_end(pattern: str, start: int) -> int:
    i = start + 1
    if i < len(pattern) and pattern[i] in "!^":
        i += 1
    if i < len(pattern) and pattern[i] == "]":
        i += 1
    end = pattern.find("]", i)
    return end


def _translate_class(body: str) -> str:
    negate = body[:1] in ("!", "^")
    if negate:
        body = body[1:]
    escaped = body.replace("\\", "\\\\").replace("[", "\\[")
    return f"[{'^/' if negate else ''}{escaped}]"
