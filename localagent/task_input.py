"""What `localagent run` is asked to do: ``PROMPT``, ``FILE`` or ``-``.

A single path-like word (no whitespace, and a ``/`` or a task-file suffix: ``TASK.md``,
``docs/task``) is a task file; ``-`` reads the task from standard input; anything else is the
prompt itself, as `claude -p "..."` and `codex exec "..."` take it, even where a file of that name
exists (a repository cannot turn `localagent run "fix the failing test"` into its own text). A
task file must resolve inside the current directory (the workspace) and be a regular file.

With a prompt, whatever is piped to standard input (when it is not a terminal) is attached after
the prompt as context, in a fenced block labelled as standard input, so
`git diff | localagent run "review this"` works. Standard input and task files are read as bytes
and decoded as UTF-8 with replacement characters, and cut at ``MAX_INPUT_BYTES`` with a one-line
warning on stderr.
"""

from __future__ import annotations

import codecs
import math
import os
import re
import select
import stat
import sys
import time
from pathlib import Path
from typing import TextIO

from localagent.errors import UsageError
from tools.regular_files import NotRegularFile, read_regular_file

# A pipe that stays open without writing (a CI runner's stdin, an editor's) must not hang the run:
# without data in this many seconds the prompt goes alone, as Claude Code does.
STDIN_WAIT_S = 3.0
# Once data has come, a pipe that stays open (`(echo hi; sleep inf) | ...`) must not hang it either:
# reading stops after this long silent, or this long in all, and the run goes on with what arrived.
STDIN_IDLE_S = 10.0
STDIN_DEADLINE_S = 60.0
# More than this (`< /dev/zero`, a huge log) is cut, with a warning: no model's context holds more.
MAX_INPUT_BYTES = 4 * 1024 * 1024
_CHUNK = 64 * 1024
STDIN_LABEL = "Standard input:"
HINT = "give a task file, - for standard input, or the prompt itself"
# One word that names a file (`TASK.md`, `docs/task`): a typo of a path, not a prompt.
_PATH_LIKE = re.compile(r"\S*/\S*|\S+\.(?:md|markdown|txt|prompt)", re.IGNORECASE)


def read_task(
    source: str,
    stdin: TextIO | None = None,
    *,
    wait_s: float = STDIN_WAIT_S,
    cwd: Path | None = None,
    max_bytes: int | None = None,
) -> str:
    """The task text for ``source``; a missing or refused task file or an empty task is a UsageError."""
    stdin = sys.stdin if stdin is None else stdin
    max_bytes = MAX_INPUT_BYTES if max_bytes is None else max_bytes
    if source == "-":
        return _not_empty(read_all(stdin, max_bytes=max_bytes), "on standard input")
    if _PATH_LIKE.fullmatch(source):
        return _not_empty(_read_task_file(source, Path.cwd() if cwd is None else cwd, max_bytes), source)
    prompt = _not_empty(source, "prompt")
    piped = piped_input(stdin, wait_s, max_bytes=max_bytes)
    return with_stdin(prompt, piped) if piped else prompt


def with_stdin(prompt: str, piped: str) -> str:
    """The prompt, then the piped text in a fence no line of it can close."""
    longest = max((len(run) for run in re.findall(r"`+", piped)), default=0)
    fence = "`" * max(3, longest + 1)
    body = piped if piped.endswith("\n") else piped + "\n"
    return f"{prompt.rstrip()}\n\n{STDIN_LABEL}\n{fence}\n{body}{fence}\n"


def piped_input(
    stdin: TextIO | None,
    wait_s: float = STDIN_WAIT_S,
    *,
    idle_s: float | None = None,
    deadline_s: float | None = None,
    max_bytes: int | None = None,
) -> str:
    """What was piped to standard input; "" for a terminal, nothing piped, or a silent pipe.

    After the first data, reading ends at end of file, at ``max_bytes``, after ``idle_s`` without
    more, or ``deadline_s`` after the first data; the last three warn on stderr. Unset, they are
    ``STDIN_IDLE_S``, ``STDIN_DEADLINE_S`` and ``MAX_INPUT_BYTES``."""
    idle_s = STDIN_IDLE_S if idle_s is None else idle_s
    deadline_s = STDIN_DEADLINE_S if deadline_s is None else deadline_s
    max_bytes = MAX_INPUT_BYTES if max_bytes is None else max_bytes
    if stdin is None or stdin.closed:
        return ""
    try:
        if stdin.isatty():
            return ""
        fd = stdin.fileno()
    except (OSError, ValueError):
        return ""
    if not _ready(fd, wait_s):
        sys.stderr.write(
            f"warning: nothing arrived on standard input in {wait_s:.0f} s; running the prompt without it"
            " (redirect it from /dev/null to skip the wait)\n"
        )
        return ""
    text = _decode(_read_fd(fd, max_bytes, idle_s=idle_s, deadline_s=deadline_s), max_bytes, "standard input")
    return text if text.strip() else ""


def read_all(stdin: TextIO | None, *, max_bytes: int | None = None) -> str:
    """Standard input to its end (the task given as ``-``), cut at ``max_bytes`` (``MAX_INPUT_BYTES``)."""
    max_bytes = MAX_INPUT_BYTES if max_bytes is None else max_bytes
    if stdin is None or stdin.closed:
        return ""
    try:
        fd = stdin.fileno()
    except (OSError, ValueError):
        fd = None
    if fd is None:  # an in-memory stream (tests, embedding): already text
        text = stdin.read(max_bytes + 1)
        if len(text) > max_bytes:
            _warn_cut("standard input", max_bytes)
            text = text[:max_bytes]
        return text
    return _decode(_read_fd(fd, max_bytes), max_bytes, "standard input")


def _ready(fd: int, timeout: float | None) -> bool:
    try:
        ready, _, _ = select.select([fd], [], [], timeout)
    except (OSError, ValueError):
        return True  # a regular file: select cannot wait on it, and it never blocks
    return bool(ready)


def _read_fd(fd: int, max_bytes: int, *, idle_s: float | None = None, deadline_s: float | None = None) -> bytes:
    """Up to ``max_bytes + 1`` bytes (one more tells a cut), in chunks; with ``idle_s`` or
    ``deadline_s``, no longer than they allow (then a warning, and what arrived)."""
    chunks: list[bytes] = []
    size = 0
    end = None if deadline_s is None else time.monotonic() + deadline_s
    while size <= max_bytes:
        if idle_s is not None or end is not None:
            left = math.inf if end is None else end - time.monotonic()
            idle = math.inf if idle_s is None else idle_s
            if left <= 0 or not _ready(fd, min(idle, left)):
                why = f"{deadline_s:.0f} s after its first data" if left <= idle else f"after {idle:.0f} s without more"
                sys.stderr.write(
                    f"warning: standard input was still open {why}; going on with the {size} bytes that arrived\n"
                )
                break
        try:
            chunk = os.read(fd, min(_CHUNK, max_bytes + 1 - size))
        except BlockingIOError:  # a non-blocking descriptor with nothing yet
            if idle_s is None and end is None:
                _ready(fd, None)
            continue
        except OSError:
            break
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def _decode(data: bytes, max_bytes: int, what: str) -> str:
    """UTF-8 with replacement characters; past ``max_bytes`` cut, with a warning, on a character boundary."""
    if len(data) <= max_bytes:
        return data.decode("utf-8", errors="replace")
    _warn_cut(what, max_bytes)
    # Not final: an incomplete character at the cut is dropped, not replaced.
    return codecs.getincrementaldecoder("utf-8")(errors="replace").decode(data[:max_bytes], final=False)


def _warn_cut(what: str, max_bytes: int) -> None:
    size = f"{max_bytes / 1024 / 1024:g} MiB" if max_bytes >= 1024 * 1024 else f"{max_bytes} bytes"
    sys.stderr.write(f"warning: {what} is over {size}; only its first {max_bytes} bytes are used (the rest is cut)\n")


def _read_task_file(source: str, cwd: Path, max_bytes: int) -> str:
    """The text of task file ``source``: it must resolve inside ``cwd`` and be a regular file."""
    try:
        resolved = Path(cwd, source).resolve(strict=True)
    except FileNotFoundError:
        raise UsageError(f"task file {source} does not exist; {HINT}") from None
    except (OSError, RuntimeError, ValueError):  # too long a name, a NUL byte, a symlink loop
        raise UsageError(f"task file {source} cannot be opened; {HINT}") from None
    workspace = Path(cwd).resolve()
    if resolved != workspace and workspace not in resolved.parents:
        raise UsageError(
            f"task file {source} resolves to {resolved}, outside the workspace {workspace}; refusing to read it"
            " (put the task in a file inside the workspace, or give the prompt itself)"
        )
    try:
        if not stat.S_ISREG(os.stat(resolved).st_mode):
            raise UsageError(f"task {source} is not a regular file; {HINT}")
        # One byte past the cap tells a cut; a FIFO or symlink swapped in since is refused.
        data = read_regular_file(resolved, max_bytes + 1).data
    except NotRegularFile:
        raise UsageError(f"task {source} is not a regular file; {HINT}") from None
    except OSError as exc:
        raise UsageError(f"task file {source} cannot be read ({exc.strerror}); {HINT}") from None
    return _decode(data, max_bytes, f"task file {source}")


def _not_empty(text: str, where: str) -> str:
    if not text.strip():
        raise UsageError(f"the task {where} is empty; write what the agent should do")
    return text
