"""Check a grep pattern against ripgrep's regex engine before any file is searched."""

from __future__ import annotations

import itertools
import re

from tools.base import ToolError
from tools.ripgrep_binary import find_rg
from tools.ripgrep_process import has_pcre2, run_rg

CHECK_TIMEOUT_SECONDS = 10.0
_NEEDS_PCRE2 = ("look-around", "backreference")
_SYNTAX_NOTE = (
    "grep uses ripgrep's regex syntax, which is Python's without lookaround, backreferences, "
    "atomic groups or \\Z (use $), matching one line at a time"
)


async def engine_flags(pattern: str, case_flags: list[str]) -> list[str]:
    """The rg flags that make `pattern` usable ([] or ["--pcre2"]), or a ToolError saying why not."""
    problem = await _rejection(pattern, case_flags, [])
    if problem is None:
        return []
    if any(word in problem for word in _NEEDS_PCRE2):
        if await has_pcre2():
            # PCRE2 backtracks, but the search still runs under grep's deadline.
            if await _rejection(pattern, case_flags, ["--pcre2"]) is None:
                return ["--pcre2"]
        else:
            raise ToolError(
                f"pattern {pattern!r} cannot be searched: {problem}; this ripgrep was built without "
                "PCRE2, so lookaround and backreferences are unsupported: rewrite the pattern without them"
            )
    raise ToolError(f"pattern {pattern!r} cannot be searched: {problem}; {_SYNTAX_NOTE}")


async def _rejection(pattern: str, case_flags: list[str], extra: list[str]) -> str | None:
    # Searching empty stdin compiles the pattern and nothing else: 0 or 1 means it is valid.
    args = [*extra, *case_flags, "--regexp", pattern, "-"]
    run = await run_rg(args, find_rg().parent, CHECK_TIMEOUT_SECONDS, lambda _: True)
    if run.timed_out:
        raise ToolError(f"checking pattern {pattern!r} took over {CHECK_TIMEOUT_SECONDS:g} s; simplify it")
    if run.returncode in (0, 1):
        return None
    return _one_line(run.stderr)


def _one_line(stderr: str) -> str:
    """rg's multi-line parse error as one line: the reason and the part of the pattern it is about."""
    lines = stderr.splitlines()
    reason = next((line.removeprefix("error: ") for line in lines if line.startswith("error: ")), None)
    if reason is None:
        return next((line.removeprefix("rg: ").strip() for line in lines if line.strip()), "rejected by ripgrep")
    for above, caret_line in itertools.pairwise(lines):
        carets = re.search(r"\^+", caret_line)
        if carets and caret_line[: carets.start()].strip() == "":
            return f"{reason} (at {above[carets.start() : carets.end()]!r})"
    return reason
