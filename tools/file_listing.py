"""List the workspace files that grep and glob consider, honouring .gitignore at every level."""

from __future__ import annotations

import os
from pathlib import Path

from tools.base import ToolError
from tools.ripgrep_process import collect_records

# Never what a search is after. .git holds git's own data, so it is never listed or searched.
ALWAYS_SKIPPED_DIRS = (".git", "node_modules", ".venv", "__pycache__")
LIST_TIMEOUT_SECONDS = 30.0


async def list_files(base: Path, timeout: float = LIST_TIMEOUT_SECONDS) -> list[Path]:
    """Sorted paths of the regular files under the directory `base`.

    ripgrep decides what is ignored, the same way in git repositories and plain directories:
    .gitignore files at every level, .git/info/exclude and .ignore files. git itself is never
    run: a repository's own config (core.fsmonitor, for one) can make git execute commands.
    Hidden files are listed. Symlinks are neither listed nor followed, so nothing outside
    `base` is reached through them.
    """
    exclusions = [f"--glob=!{name}" for name in ALWAYS_SKIPPED_DIRS]
    args = ["--files", "--hidden", "--no-require-git", "--null", *exclusions, "--", "."]
    records, run = await collect_records(args, base, timeout, separator=b"\0")
    if run.timed_out:
        raise ToolError(f"listing the files under {base} took over {timeout:g} s; give a narrower path")
    if run.returncode not in (0, 1) and not records:
        raise ToolError(f"could not list the files under {base}: {first_error_line(run.stderr)}")
    # os.fsdecode keeps names that are not valid UTF-8 usable as paths.
    return sorted({base / os.fsdecode(record) for record in records})


def inside_git_dir(path: Path, workspace: Path) -> bool:
    """Whether `path` lies in a .git directory (git's data, not the project's files)."""
    try:
        parts = path.relative_to(workspace).parts
    except ValueError:
        parts = path.parts
    return ".git" in parts


def refuse_git_dir(base: Path, workspace: Path, shown: str, tool_says: str) -> None:
    """ToolError when `base` lies in .git; `tool_says` ends the message, e.g. "grep does not search"."""
    if inside_git_dir(base, workspace):
        raise ToolError(f"{shown} is inside .git, git's own data, which {tool_says}")


def first_error_line(stderr: str) -> str:
    for line in stderr.splitlines():
        text = line.removeprefix("rg: ").strip()
        if text:
            return text
    return "ripgrep failed without saying why"
