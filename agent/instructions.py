"""Instructions: the user's own AGENTS.md, then AGENTS.md from the repository root down to the
working directory.

Each repository directory contributes its AGENTS.md, or its CLAUDE.md when it has no AGENTS.md.
A user-level file (the CLI passes ``<config dir>/AGENTS.md``, like Codex's ``~/.codex/AGENTS.md``)
comes first, under its own header: it holds the person's habits for every repository.

The total is capped. Files run from the most general to the most specific, and a later file wins
where two disagree, so the cap cuts from the front: the user-level file is truncated first, then
the repository root's, and the deepest file (the one about the code at hand) is kept whole longest.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

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
    """One file per directory, root first, down to `cwd`."""
    start = Path(cwd).resolve()
    root = repo_root(start)
    chain = [start, *start.parents]
    found: list[Path] = []
    for directory in reversed(chain[: chain.index(root) + 1]):
        for name in FILE_NAMES:
            candidate = directory / name
            if candidate.is_file():
                found.append(candidate)
                break
    return found


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return ""


def _shown(path: Path) -> str:
    """A user-level file's path for its header, with the home directory as ~."""
    try:
        return "~/" + path.relative_to(Path.home()).as_posix()
    except (ValueError, RuntimeError):
        return path.as_posix()


def _candidates(cwd: Path, user_file: Path | None) -> list[InstructionFile]:
    """Every non-empty file, most general first, uncut."""
    items: list[InstructionFile] = []
    if user_file is not None and Path(user_file).is_file():
        text = _read(Path(user_file))
        if text:
            items.append(InstructionFile(Path(user_file), _shown(Path(user_file)), text, user_level=True))
    root = repo_root(cwd)
    for path in find_instruction_files(cwd):
        text = _read(path)
        if text:
            items.append(InstructionFile(path, path.relative_to(root).as_posix(), text))
    return items


def collect_instructions(
    cwd: Path, max_bytes: int = DEFAULT_MAX_BYTES, *, user_file: Path | None = None
) -> list[InstructionFile]:
    """The files' texts, cut to fit `max_bytes` of UTF-8 in total (headers not counted)."""
    budget = max(max_bytes, 0)
    kept: list[InstructionFile] = []
    for item in reversed(_candidates(cwd, user_file)):
        data = item.text.encode("utf-8")
        if len(data) <= budget:
            kept.append(item)
            budget -= len(data)
            continue
        # Cut on a character boundary; the start of a file usually holds its most general rules.
        head = data[:budget].decode("utf-8", errors="ignore").rstrip()
        omitted = len(data) - len(head.encode("utf-8"))
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
