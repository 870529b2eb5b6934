"""Unified diffs of file changes, for approval prompts and the metadata of edits."""

from __future__ import annotations

import difflib

NO_NEWLINE_MARKER = "\\ No newline at end of file\n"


def unified_diff(old_text: str, new_text: str, shown_path: str, *, is_new_file: bool = False) -> str:
    old_lines = _lines_keeping_ends(old_text)
    new_lines = _lines_keeping_ends(new_text)
    from_file = "/dev/null" if is_new_file else f"a/{shown_path}"
    parts: list[str] = []
    for line in difflib.unified_diff(old_lines, new_lines, fromfile=from_file, tofile=f"b/{shown_path}"):
        if line.endswith("\n"):
            parts.append(line)
        else:
            # Same convention as git, so a missing final newline is visible in the diff.
            parts.append(line + "\n" + NO_NEWLINE_MARKER)
    return "".join(parts)


def _lines_keeping_ends(text: str) -> list[str]:
    # str.splitlines would also split on \f, \x1c, U+2028 ... and misnumber the hunks.
    if not text:
        return []
    lines = text.split("\n")
    last = lines.pop()
    result = [line + "\n" for line in lines]
    if last:
        result.append(last)
    return result
