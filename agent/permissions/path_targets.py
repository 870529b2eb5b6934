"""Where a file tool call lands, for the permission rules: the path as written and as resolved.

Rules name paths inside the workspace (`edit(secret/**)`), but a call may spell its path
through a symlink (`alias/key.txt` with `alias -> secret`) or with `..`. The tools follow
symlinks, so the policy must judge the resolved path too.

A git directory is protected whatever its name: `.git`, and any directory that git would take
for one (HEAD with objects/ and refs/, as `git init --separate-git-dir` makes) or that a `.git`
file on the way names with its `gitdir:` line.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

__all__ = ["AGENT_CONFIG_FILES", "PathTarget", "normalise_path", "path_target"]

# The workspace's own agent configuration: editing it changes what the agent may do.
AGENT_CONFIG_FILES = frozenset({".localagent.toml", ".mcp.json"})
GIT_DIR = ".git"
# Enough of a `.git` file for its `gitdir:` line.
_GITDIR_FILE_BYTES = 4096


@dataclass(frozen=True)
class PathTarget:
    # Lexically normalised as the call spells it: "src/a.py", "../x", "/etc/passwd".
    written: str
    # Workspace-relative with symlinks followed; None when it lands outside the workspace.
    resolved: str | None
    # The workspace with symlinks followed, when known: where git directories are looked for.
    root: str | None = None

    @property
    def spellings(self) -> tuple[str, ...]:
        """Both forms, for deny and ask rules: either matching is enough to stop a call."""
        forms = [self.written.lstrip("/")]
        if self.resolved is not None and self.resolved not in forms:
            forms.append(self.resolved)
        return tuple(forms)

    def git_directory(self) -> str | None:
        """The git directory the path lies in: ".git", or the workspace-relative one found on disk."""
        # Case-folded: on case-insensitive file systems `.GIT/hooks` is `.git/hooks`.
        if any(GIT_DIR in _parts(form) for form in (self.written, self.resolved) if form is not None):
            return GIT_DIR
        if self.root is None or self.resolved is None:
            return None
        return _git_directory_on_disk(self.root, self.resolved)

    def is_agent_config(self) -> bool:
        """Whether it lands on the workspace's own `.localagent.toml` or `.mcp.json`."""
        return any(form is not None and form.casefold() in AGENT_CONFIG_FILES for form in (self.resolved, self.written))


def path_target(
    summary: str, workspace: Path | None = None, arguments: Mapping[str, object] | None = None
) -> PathTarget:
    """From the call summary (a normalised path) and, when known, the raw `path` argument."""
    written = normalise_path(summary)
    raw = arguments.get("path") if arguments is not None else None
    raw_text = raw if isinstance(raw, str) and raw.strip() else summary.strip()
    if workspace is None:
        # Nothing to resolve against: only the text can say whether it stays inside.
        inside = written and not written.startswith("/") and written != ".." and not written.startswith("../")
        return PathTarget(written, written if inside else None)
    try:
        root: str | None = os.path.realpath(workspace)
    except (OSError, ValueError):
        root = None
    return PathTarget(written, _resolve(raw_text, root) if root is not None else None, root)


def _resolve(raw: str, root: str) -> str | None:
    if not raw or "\x00" in raw:
        return None
    try:
        landed = os.path.realpath(os.path.join(root, raw))
    except (OSError, ValueError):
        return None
    return _inside(landed, root)


def _inside(landed: str, root: str) -> str | None:
    """`landed` relative to `root` ("." for the root itself), or None when it lies outside."""
    if landed == root:
        return "."
    if not landed.startswith(root.rstrip(os.sep) + os.sep):
        return None
    return Path(os.path.relpath(landed, root)).as_posix()


def _git_directory_on_disk(root: str, resolved: str) -> str | None:
    """The directory holding `resolved` (or itself) that is a git directory, workspace-relative."""
    parts = [] if resolved == "." else resolved.split("/")
    for count in range(len(parts), -1, -1):
        if _looks_like_git_directory(os.path.join(root, *parts[:count])):
            return "/".join(parts[:count]) or "."
    # `.git` files (a separate git directory, a worktree, a submodule) in the directories on the way.
    for count in range(len(parts)):
        directory = os.path.join(root, *parts[:count])
        pointed = _gitdir_line(os.path.join(directory, GIT_DIR))
        if pointed is None:
            continue
        try:
            landed = os.path.realpath(os.path.join(directory, pointed))
        except (OSError, ValueError):
            continue
        named = _inside(landed, root)
        if named is None:
            continue
        if named == "." or resolved == named or resolved.startswith(named + "/"):
            return named
    return None


def _looks_like_git_directory(directory: str) -> bool:
    """What git itself checks: a HEAD, and objects/ and refs/ (or a commondir, for a worktree's)."""
    if not os.path.isfile(os.path.join(directory, "HEAD")):
        return False
    has_stores = os.path.isdir(os.path.join(directory, "objects")) and os.path.isdir(os.path.join(directory, "refs"))
    return has_stores or os.path.isfile(os.path.join(directory, "commondir"))


def _gitdir_line(path: str) -> str | None:
    if not os.path.isfile(path):
        return None
    try:
        with open(path, "rb") as handle:
            head = handle.read(_GITDIR_FILE_BYTES)
    except OSError:
        return None
    first = head.decode("utf-8", "replace").splitlines()[:1]
    if not first or not first[0].startswith("gitdir:"):
        return None
    pointed = first[0].removeprefix("gitdir:").strip()
    return pointed or None


def normalise_path(summary: str) -> str:
    """The path as a call summary spells it, lexically normalised ("" for none)."""
    text = summary.strip()
    return posixpath.normpath(text) if text else ""


def _parts(path: str) -> list[str]:
    return [part.casefold() for part in PurePosixPath(path).parts]
