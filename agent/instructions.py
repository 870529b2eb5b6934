"""Project instructions: AGENTS.md from the repository root down to the working directory.

Each directory contributes its AGENTS.md, or its CLAUDE.md when it has no AGENTS.md. The total
is capped: the deepest files are the most specific, so they are kept whole and the earlier,
more general ones are truncated first.
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
    # POSIX path relative to the repository root, shown in the header.
    relative: str
    text: str
    omitted_bytes: int = 0


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


def collect_instructions(cwd: Path, max_bytes: int = DEFAULT_MAX_BYTES) -> list[InstructionFile]:
    """The files' texts, cut to fit `max_bytes` of UTF-8 in total (headers not counted)."""
    root = repo_root(cwd)
    texts: list[tuple[Path, str]] = []
    for path in find_instruction_files(cwd):
        try:
            text = path.read_text(encoding="utf-8", errors="replace").strip()
        except OSError:
            continue
        if text:
            texts.append((path, text))
    budget = max(max_bytes, 0)
    kept: list[InstructionFile] = []
    for path, text in reversed(texts):
        data = text.encode("utf-8")
        relative = path.relative_to(root).as_posix()
        if len(data) <= budget:
            kept.append(InstructionFile(path, relative, text))
            budget -= len(data)
            continue
        # Cut on a character boundary; the start of a file usually holds its most general rules.
        head = data[:budget].decode("utf-8", errors="ignore").rstrip()
        kept.append(InstructionFile(path, relative, head, omitted_bytes=len(data) - len(head.encode("utf-8"))))
        budget = 0
    kept.reverse()
    return kept


def load_instructions(cwd: Path, max_bytes: int = DEFAULT_MAX_BYTES) -> str:
    """The combined text for the system prompt, a header per file; "" when there are none."""
    parts: list[str] = []
    for item in collect_instructions(cwd, max_bytes):
        body = item.text
        if item.omitted_bytes:
            marker = f"[... {item.omitted_bytes} bytes of {item.relative} omitted to fit the {max_bytes}-byte limit]"
            body = f"{body}\n{marker}" if body else marker
        parts.append(f"## {item.relative}\n\n{body}")
    return "\n\n".join(parts)
