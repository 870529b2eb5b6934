"""Instructions: the user's own AGENTS.md, then AGENTS.md from the repository root down to the
working directory.

Each repository directory contributes its AGENTS.md, or its CLAUDE.md when it has no AGENTS.md.
A user-level file (the CLI passes ``<config dir>/AGENTS.md``, like Codex's ``~/.codex/AGENTS.md``)
comes first, under its own header: it holds the person's habits for every repository.

The total is capped. Files run from the most general to the most specific, and a later file wins
where two disagree, so the cap cuts from the front: the user-level file is truncated first, then
the repository root's, and the deepest file (the one about the code at hand) is kept whole longest.

The repository is not trusted: a repository file is used only when it resolves inside the
repository root (a symlink to ``/proc/self/environ`` or ``~/.ssh`` is skipped) and is a regular
file (a FIFO would block, a device would never end). The user-level file is the person's own and
may be a symlink anywhere, but must be a regular file too. Every file is read with a size cap and
never blocks. A skipped file gets a one-line warning on the ``agent.instructions`` logger (on
stderr in a headless run, in the log file under the TUI), and counts as absent: a directory whose
AGENTS.md is skipped falls back to its CLAUDE.md.
"""

from __future__ import annotations

import codecs
import logging
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from tools.regular_files import NotRegularFile, read_regular_file

__all__ = [
    "DEFAULT_MAX_BYTES",
    "FILE_NAMES",
    "InstructionFile",
    "collect_instructions",
    "find_instruction_files",
    "load_instructions",
    "repo_root",
]

DEFAULT_MAX_BYTES = 32 * 1024
# In order of preference within one directory.
FILE_NAMES = ("AGENTS.md", "CLAUDE.md")
# Read beyond the cap, so that stripping blank lines and cutting on a character boundary still
# have text to work with; the rest of a bigger file is counted as omitted, never read.
_READ_SLACK = 4096

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class InstructionFile:
    path: Path
    # POSIX path relative to the repository root (the file's own path for a user-level file).
    relative: str
    text: str
    omitted_bytes: int = 0
    user_level: bool = False

    @property
    def header(self) -> str:
        if self.user_level:
            return f"## {self.relative} (the user's own instructions, for every repository)"
        return f"## {self.relative}"


def repo_root(cwd: Path) -> Path:
    """The nearest directory at or above `cwd` holding `.git` (a directory, or a file in worktrees)."""
    start = Path(cwd).resolve()
    for directory in (start, *start.parents):
        if (directory / ".git").exists():
            return directory
    return start


def find_instruction_files(cwd: Path) -> list[Path]:
    """One file per directory, root first, down to `cwd`; files that resolve outside the
    repository root or are not regular files are skipped (with a warning)."""
    start = Path(cwd).resolve()
    root = repo_root(start)
    chain = [start, *start.parents]
    found: list[Path] = []
    for directory in reversed(chain[: chain.index(root) + 1]):
        for name in FILE_NAMES:
            candidate = directory / name
            if _usable(candidate, root):
                found.append(candidate)
                break
    return found


def _usable(path: Path, root: Path | None) -> bool:
    """Whether `path` is a regular file (after symlinks) and, for a repository file (`root` given),
    resolves inside `root`. A path that does not exist is simply not usable; anything else that is
    refused is logged."""
    try:
        if not os.path.lexists(path):
            return False
        resolved = path.resolve(strict=True)
        mode = os.stat(resolved).st_mode
    except FileNotFoundError:
        _skip(path, "it is a symlink to nothing")
        return False
    except (OSError, RuntimeError, ValueError) as exc:
        _skip(path, f"it cannot be resolved ({exc})")
        return False
    if root is not None and resolved != root and root not in resolved.parents:
        _skip(path, f"it resolves to {resolved}, outside the repository {root}")
        return False
    if not stat.S_ISREG(mode):
        _skip(path, "it is not a regular file")
        return False
    return True


def _skip(path: Path, why: str) -> None:
    log.warning("note: instruction file %s skipped: %s", path, why)


def _read(path: Path, limit: int | None = None, root: Path | None = None) -> tuple[str, int]:
    """The stripped text of `path` (at most `limit` bytes of it) and how many bytes were left
    unread; ("", 0) when it cannot be read, or (checked again: it may have changed since
    `_usable`) resolves outside `root` or is not a regular file once opened."""
    try:
        resolved = path.resolve(strict=True)
        if root is not None and resolved != root and root not in resolved.parents:
            _skip(path, f"it resolves to {resolved}, outside the repository {root}")
            return "", 0
        # The resolved path has no symlink left, so a symlink swapped in since is refused.
        read = read_regular_file(resolved, limit)
    except NotRegularFile:
        _skip(path, "it is not a regular file")
        return "", 0
    except (OSError, RuntimeError, ValueError):
        return "", 0
    data, unread = read.data, read.unread
    # Not final at a cut: an incomplete character there is dropped, not replaced.
    text = codecs.getincrementaldecoder("utf-8")(errors="replace").decode(data, final=not unread)
    return text.strip(), unread


def _shown(path: Path) -> str:
    """A user-level file's path for its header, with the home directory as ~."""
    try:
        return "~/" + path.relative_to(Path.home()).as_posix()
    except (ValueError, RuntimeError):
        return path.as_posix()


def _candidates(cwd: Path, user_file: Path | None, limit: int | None = None) -> list[InstructionFile]:
    """Every non-empty file, most general first, uncut (but read no further than `limit` bytes;
    the rest is counted in `omitted_bytes`)."""
    items: list[InstructionFile] = []
    if user_file is not None and _usable(Path(user_file), None):
        text, unread = _read(Path(user_file), limit)
        if text:
            items.append(InstructionFile(Path(user_file), _shown(Path(user_file)), text, unread, user_level=True))
    root = repo_root(cwd)
    for path in find_instruction_files(cwd):
        text, unread = _read(path, limit, root)
        if text:
            items.append(InstructionFile(path, path.relative_to(root).as_posix(), text, unread))
    return items


def collect_instructions(
    cwd: Path, max_bytes: int = DEFAULT_MAX_BYTES, *, user_file: Path | None = None
) -> list[InstructionFile]:
    """The files' texts, cut to fit `max_bytes` of UTF-8 in total (headers not counted)."""
    budget = max(max_bytes, 0)
    kept: list[InstructionFile] = []
    for item in reversed(_candidates(cwd, user_file, budget + _READ_SLACK)):
        data = item.text.encode("utf-8")
        if len(data) <= budget:
            kept.append(item)
            budget -= len(data)
            continue
        # Cut on a character boundary; the start of a file usually holds its most general rules.
        head = data[:budget].decode("utf-8", errors="ignore").rstrip()
        omitted = len(data) - len(head.encode("utf-8")) + item.omitted_bytes
        kept.append(InstructionFile(item.path, item.relative, head, omitted, item.user_level))
        budget = 0
    kept.reverse()
    return kept


def load_instructions(cwd: Path, *, max_bytes: int = DEFAULT_MAX_BYTES, user_file: Path | None = None) -> str:
    """The combined text for the system prompt, a header per file; "" when there are none."""
    parts: list[str] = []
    for item in collect_instructions(cwd, max_bytes, user_file=user_file):
        body = item.text
        if item.omitted_bytes:
            marker = f"[... {item.omitted_bytes} bytes of {item.relative} omitted to fit the {max_bytes}-byte limit]"
            body = f"{body}\n{marker}" if body else marker
        parts.append(f"{item.header}\n\n{body}")
    return "\n\n".join(parts)
