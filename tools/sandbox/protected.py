"""Paths of the workspace that no sandboxed command may change, and the check that restores them.

Each of these makes something run later, outside the sandbox or with the person's trust: git's
config and hooks (`core.fsmonitor`, `core.worktree`, a pre-commit hook), `.gitmodules`, the
workspace's localagent and MCP settings, Claude Code's settings, shell start-up files and direnv's
`.envrc`. Objects, refs and the index are not here, so `git add` and `git commit` keep working.

Under bubblewrap the ones that exist are mounted read-only; Landlock cannot exempt a file beneath a
writable folder. So, under every layer, the paths are also read before each command and compared
after it: what changed is put back and the command's result says so. The check also catches a
protected path the command created (it did not exist, so nothing could be mounted over it).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import subprocess
from collections import deque
from dataclasses import dataclass
from pathlib import Path

from tools.program_path import which_absolute

PROTECTED_FILES = (
    ".git/config", ".git/config.worktree", ".git/commondir", ".gitmodules", ".localagent.toml", ".mcp.json", ".envrc",
    ".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile",
    ".zshrc", ".zshenv", ".zprofile", ".zlogin", ".zlogout",
)  # fmt: skip
PROTECTED_DIRS = (".git/hooks", ".git/info", ".claude")
PROTECTED = PROTECTED_FILES + PROTECTED_DIRS
# What is kept to put back: file bytes up to this much in all; beyond it a file is known by its
# hash (a change is still found and said, and the file is removed rather than left changed).
_MAX_BYTES = 8 << 20
# A protected folder is read to this many entries and this depth; past them (a hostile tree built
# to make the check give up) it counts as changed whenever anything about its top level did.
_MAX_ENTRIES = 4000
_MAX_DEPTH = 24


@dataclass(frozen=True)
class _Entry:
    kind: str  # "file", "link", "dir", "other" or "overflow"
    data: bytes = b""  # file bytes (when kept), or a link's target
    mode: int = 0
    digest: str = ""  # a file's sha256: how a change is found when its bytes were not kept
    kept: bool = True


def _read(path: Path, budget: list[int]) -> _Entry | None:
    try:
        info = os.lstat(path)
    except OSError:
        return None
    if stat.S_ISLNK(info.st_mode):
        return _Entry("link", os.fsencode(os.readlink(path)))
    if stat.S_ISDIR(info.st_mode):
        return _Entry("dir", mode=stat.S_IMODE(info.st_mode))
    if not stat.S_ISREG(info.st_mode):
        return _Entry("other", mode=stat.S_IMODE(info.st_mode))
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return _Entry("other")
    with os.fdopen(fd, "rb") as handle:
        data = handle.read()
    digest = hashlib.sha256(data).hexdigest()
    kept = len(data) <= budget[0]
    if kept:
        budget[0] -= len(data)
    return _Entry("file", data if kept else b"", stat.S_IMODE(info.st_mode), digest, kept)


@dataclass(frozen=True)
class ProtectedState:
    """The protected paths of one workspace as they were before a command."""

    workspace: Path
    entries: dict[str, _Entry]
    # The paths read, found once before the command: a link the command makes to a file of the
    # project must not make that file look new (and be removed) when they are read again.
    roots: tuple[str, ...]

    @classmethod
    def read(cls, workspace: Path, roots: tuple[str, ...] | None = None) -> ProtectedState:
        roots = tuple(protected_here(workspace)) if roots is None else roots
        entries: dict[str, _Entry] = {}
        budget = [_MAX_BYTES]
        for relative in roots:
            _collect(workspace, relative, entries, budget)
        return cls(workspace, entries, roots)

    def restore_changes(self) -> list[str]:
        """Put back what changed since `read`; the paths that changed (or could not be restored)."""
        now = ProtectedState.read(self.workspace, self.roots)
        changed = sorted(
            set(self.entries) ^ set(now.entries)
            | {path for path, entry in self.entries.items() if now.entries.get(path) not in (None, entry)}
        )
        if not changed:
            return []
        # A folder that grew past the caps is taken down whole and rebuilt from what was read.
        rebuilt = {path.split("/\0", 1)[0] for path in changed if "\0" in path}
        for folder in rebuilt:
            changed = [p for p in changed if not (p == folder or p.startswith(folder + "/"))]
            changed += [folder] if folder not in self.entries else []
            changed += [p for p in self.entries if (p == folder or p.startswith(folder + "/")) and "\0" not in p]
        reported: list[str] = [folder + self._remove(folder) for folder in rebuilt if folder in self.entries]
        # Deepest first for removals, shallowest first for writes.
        for relative in sorted(set(changed), key=lambda p: -p.count("/")):
            if relative not in self.entries:
                reported.append(relative + self._remove(relative))
        for relative in sorted(set(changed), key=lambda p: p.count("/")):
            if relative in self.entries and "\0" not in relative:
                reported.append(relative + self._put_back(relative, self.entries[relative]))
        return _top_level(reported)

    def _inside(self, relative: str) -> Path | None:
        """The path to change, when its folder still resolves inside the workspace."""
        path = self.workspace / relative
        parent = Path(os.path.realpath(path.parent))
        return path if parent.is_relative_to(self.workspace.resolve()) else None

    def _remove(self, relative: str) -> str:
        path = self._inside(relative)
        if path is None:
            return " (not removed: its folder now leads out of the workspace)"
        try:
            if path.is_dir() and not path.is_symlink():
                _remove_tree(path)
            else:
                path.unlink(missing_ok=True)
        except OSError as exc:
            return f" (not removed: {exc.strerror})"
        return ""

    def _put_back(self, relative: str, entry: _Entry) -> str:
        path = self._inside(relative)
        if path is None:
            return " (not restored: its folder now leads out of the workspace)"
        try:
            if os.path.lexists(path) and (path.is_symlink() or not path.is_dir() or entry.kind != "dir"):
                if path.is_dir() and not path.is_symlink():
                    _remove_tree(path)
                else:
                    path.unlink()
            if entry.kind == "dir":
                path.mkdir(mode=entry.mode or 0o755, exist_ok=True)
                os.chmod(path, entry.mode or 0o755)
            elif entry.kind == "link":
                os.symlink(os.fsdecode(entry.data), path)
            elif entry.kind == "file" and not entry.kept:
                return " (not restored: too large to keep; removed)"
            elif entry.kind == "file":
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, entry.mode or 0o644)
                with os.fdopen(fd, "wb") as handle:
                    handle.write(entry.data)
                os.chmod(path, entry.mode or 0o644)
            else:
                return " (not restored: not a regular file)"
        except OSError as exc:
            return f" (not restored: {exc.strerror})"
        return ""


def _collect(workspace: Path, root: str, entries: dict[str, _Entry], budget: list[int]) -> None:
    """`root` and what lies beneath it, breadth first, within the caps."""
    pending = deque([root])
    seen = 0
    while pending:
        relative = pending.popleft()
        entry = _read(workspace / relative, budget)
        if entry is None:
            continue
        entries[relative] = entry
        seen += 1
        if entry.kind != "dir":
            continue
        if seen >= _MAX_ENTRIES or relative.count("/") - root.count("/") >= _MAX_DEPTH:
            entries[relative + "/\0overflow"] = _Entry("overflow")
            return
        try:
            names = sorted(os.listdir(workspace / relative))
        except OSError:
            continue
        pending.extend(f"{relative}/{name}" for name in names)


def _remove_tree(path: Path) -> None:
    """Remove a folder however deep: a tree built past Python's recursion limit defeats rmtree."""
    try:
        shutil.rmtree(path)
    except RecursionError:
        # Never an `rm` the workspace holds (tools.program_path).
        rm = which_absolute("rm") or "/bin/rm"
        subprocess.run([rm, "-rf", "--", str(path)], check=False, capture_output=True, timeout=60)


def _top_level(paths: list[str]) -> list[str]:
    """One line per protected path: `.git/hooks` for any change beneath it."""
    seen: dict[str, str] = {}
    for path in paths:
        root = next((p for p in PROTECTED if path == p or path.startswith(p + "/")), path)
        note = path[len(path.split(" (", 1)[0]) :]
        if root not in seen or note:
            seen[root] = root + note
    return list(seen.values())


def protected_here(workspace: Path) -> list[str]:
    """The protected paths of this workspace, workspace-relative: the fixed ones, and where one
    that a repository ships as a symlink leads inside the workspace (`.envrc -> cfg/envrc`: a
    command changing cfg/envrc changes what direnv runs)."""
    found = list(PROTECTED)
    root = Path(os.path.realpath(workspace))
    for relative in PROTECTED:
        path = workspace / relative
        if not path.is_symlink():
            continue
        target = Path(os.path.realpath(path))
        if target.is_relative_to(root) and target != root and os.path.lexists(target):
            shown = target.relative_to(root).as_posix()
            if shown not in found:
                found.append(shown)
    return found


def existing_protected(workspace: Path) -> list[Path]:
    """The protected paths present now, links followed (what bubblewrap mounts read-only)."""
    found = []
    for relative in protected_here(workspace):
        path = workspace / relative
        if os.path.lexists(path) and not path.is_symlink():
            found.append(path)
    return found
