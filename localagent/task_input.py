"""What `localagent run` is asked to do: ``PROMPT``, ``FILE`` or ``-``.

An existing file is a task file; ``-`` reads the task from standard input; anything else is the
prompt itself, as `claude -p "..."` and `codex exec "..."` take it. With a prompt, whatever is
piped to standard input (when it is not a terminal) is attached after the prompt as context, in a
fenced block labelled as standard input, so `git diff | localagent run "review this"` works.
"""

from __future__ import annotations

import re
import select
import sys
from pathlib import Path
from typing import TextIO

from localagent.errors import UsageError

# A pipe that stays open without writing (a CI runner's stdin, an editor's) must not hang the run:
# without data in this many seconds the prompt goes alone, as Claude Code does.
STDIN_WAIT_S = 3.0
STDIN_LABEL = "Standard input:"
HINT = "give a task file, - for standard input, or the prompt itself"
# One word that names a file (`TASK.md`, `docs/task`): a typo of a path, not a prompt.
_PATH_LIKE = re.compile(r"\S*/\S*|\S+\.(?:md|markdown|txt|prompt)", re.IGNORECASE)


def read_task(source: str, stdin: TextIO | None = None, *, wait_s: float = STDIN_WAIT_S) -> str:
    """The task text for ``source``; a missing task file or an empty task is a UsageError."""
    stdin = sys.stdin if stdin is None else stdin
    if source == "-":
        return _not_empty(stdin.read() if stdin is not None else "", "on standard input")
    kind = _path_kind(source)
    if kind == "file":
        return _not_empty(Path(source).read_text(encoding="utf-8", errors="replace"), source)
    if kind == "other":
        raise UsageError(f"task {source} is not a regular file; {HINT}")
    if _PATH_LIKE.fullmatch(source.strip()):
        raise UsageError(f"task file {source} does not exist; {HINT}")
    prompt = _not_empty(source, "prompt")
    piped = piped_input(stdin, wait_s)
    return with_stdin(prompt, piped) if piped else prompt


def with_stdin(prompt: str, piped: str) -> str:
    """The prompt, then the piped text in a fence no line of it can close."""
    longest = max((len(run) for run in re.findall(r"`+", piped)), default=0)
    fence = "`" * max(3, longest + 1)
    body = piped if piped.endswith("\n") else piped + "\n"
    return f"{prompt.rstrip()}\n\n{STDIN_LABEL}\n{fence}\n{body}{fence}\n"


def piped_input(stdin: TextIO | None, wait_s: float = STDIN_WAIT_S) -> str:
    """What was piped to standard input; "" for a terminal, nothing piped, or a silent pipe."""
    if stdin is None or stdin.closed:
        return ""
    try:
        if stdin.isatty():
            return ""
        fd = stdin.fileno()
    except (OSError, ValueError):
        return ""
    try:
        ready, _, _ = select.select([fd], [], [], wait_s)
    except (OSError, ValueError):
        ready = [fd]  # a regular file: select cannot wait on it, and it never blocks
    if not ready:
        sys.stderr.write(
            f"warning: nothing arrived on standard input in {wait_s:.0f} s; running the prompt without it"
            " (redirect it from /dev/null to skip the wait)\n"
        )
        return ""
    text = stdin.read()
    return text if text.strip() else ""


def _path_kind(source: str) -> str | None:
    """"file", "other" (a directory, a device) or None: no such path, or no path at all (a long
    prompt is too long a name; one with a NUL byte is not a name)."""
    try:
        path = Path(source)
        if path.is_file():
            return "file"
        return "other" if path.exists() else None
    except (OSError, ValueError):
        return None


def _not_empty(text: str, where: str) -> str:
    if not text.strip():
        raise UsageError(f"the task {where} is empty; write what the agent should do")
    return text
