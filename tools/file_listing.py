"""List the workspace files that grep and glob consider, honouring .gitignore."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tools.ignore_rules import IgnoreRules
from tools.workspace_paths import is_inside

# Skipped by the fallback walker even without a .gitignore: never what a search is after.
ALWAYS_SKIPPED_DIRS = frozenset({".git", "node_modules", ".venv", "__pycache__"})
GIT_LIST_TIMEOUT_SECONDS = 30.0


def list_files(workspace: Path, base: Path) -> list[Path]:
    """Sorted paths of regular files under `base` (a directory inside `workspace`).

    In a git work tree git decides what is ignored; elsewhere the tree is walked and the
    workspace's top-level .gitignore is applied. Symlinks leading out of the workspace are
    dropped so searches cannot read outside it.
    """
    root = workspace.resolve()
    candidates = _list_with_git(base)
    if candidates is None:
        candidates = _list_by_walking(root, base)
    unique = sorted(set(candidates))
    return [path for path in unique if _is_searchable_file(path, root)]


def _list_with_git(base: Path) -> list[Path] | None:
    command = ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"]
    # Optional locks off: listing must not contend with a git command the user runs.
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0"}
    try:
        completed = subprocess.run(
            command,
            cwd=base,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=GIT_LIST_TIMEOUT_SECONDS,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if completed.returncode != 0:
        return None
    names = completed.stdout.decode("utf-8", errors="surrogateescape").split("\0")
    return [base / name for name in names if name]


def _list_by_walking(root: Path, base: Path) -> list[Path]:
    rules = IgnoreRules.from_gitignore(root / ".gitignore")
    found: list[Path] = []
    for dir_path, dir_names, file_names in os.walk(base):
        current = Path(dir_path)
        relative_dir = _relative_posix(current, root)
        kept_dirs = []
        for name in sorted(dir_names):
            if name in ALWAYS_SKIPPED_DIRS:
                continue
            if rules.is_ignored(_join(relative_dir, name), is_dir=True):
                continue
            kept_dirs.append(name)
        # os.walk descends only into what is left in dir_names.
        dir_names[:] = kept_dirs
        for name in file_names:
            if not rules.is_ignored(_join(relative_dir, name), is_dir=False):
                found.append(current / name)
    return found


def _is_searchable_file(path: Path, root: Path) -> bool:
    try:
        return path.is_file() and is_inside(path.resolve(), root)
    except OSError:
        return False


def _relative_posix(path: Path, root: Path) -> str:
    relative = path.relative_to(root).as_posix()
    return "" if relative == "." else relative


def _join(directory: str, name: str) -> str:
    return f"{directory}/{name}" if directory else name
