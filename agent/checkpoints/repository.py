"""The git repository checkpoints live in, and the plumbing they are made with.

In a git repository that is the repository itself (private refs only; the user's branch,
HEAD, index and stash are never touched); elsewhere a private bare "shadow" repository under
the data directory, with the workspace as its work tree.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from agent.errors import AgentError
from tools.safe_git import GIT_TIMEOUT_SECONDS, git_env, run_git

__all__ = ["CheckpointError", "SnapshotRepo"]

# Byte-exact round trips: no line-ending rewriting, no refusal over line endings, no chatter.
_OPTIONS = (
    ("core.autocrlf", "false"),
    ("core.safecrlf", "false"),
    ("advice.addEmbeddedRepo", "false"),
    ("core.quotepath", "false"),
)

_GITLINK_MODE = "160000"
# Directories no one wants snapshotted when the workspace is not a git repository.
_SHADOW_EXCLUDES = (".git", ".venv/", "venv/", "node_modules/", "__pycache__/", ".mypy_cache/", ".pytest_cache/")


class CheckpointError(AgentError):
    """A checkpoint could not be created, listed or restored."""


@dataclass(frozen=True)
class _Layout:
    work_tree: Path
    git_dir: Path
    # The index whose stat cache makes `git add -A` fast; copied, never written, for a user repo.
    seed_index: Path
    shadow: bool


class SnapshotRepo:
    """Runs git for the checkpoints of one workspace; found (or made) on first use."""

    def __init__(self, workspace: Path, data_dir: Path) -> None:
        self.workspace = workspace
        self.data_dir = data_dir
        self._layout: _Layout | None = None
        self._notice: str | None = None

    @property
    def layout(self) -> _Layout:
        if self._layout is None:
            self._layout = self._discover() or self._shadow_layout()
        return self._layout

    @property
    def notice(self) -> str | None:
        """Why this workspace's own git repository is not used for checkpoints, if it is not."""
        _ = self.layout
        return self._notice

    def _discover(self) -> _Layout | None:
        """The workspace's own repository, when its whole layout lies inside the workspace.

        Git is never asked where the repository is: `core.worktree`, `core.bare`, a gitfile, a
        `commondir` or `GIT_*` variables would let a repository (or a command run in it) point
        the checkpoints, and so a restore, at another tree. The git directory must be the
        workspace's own `.git` folder, and every call names it and the work tree explicitly.
        """
        dot_git = self.workspace / ".git"
        if not os.path.lexists(dot_git):
            above = _enclosing_repository(self.workspace)
            if above is not None:
                self._notice = (
                    f"checkpoints: the workspace is inside the repository at {above}; undo keeps its "
                    "own copy of this folder instead, so it never touches files outside the workspace"
                )
            return None
        if dot_git.is_symlink() or not dot_git.is_dir():
            self._notice = (
                "checkpoints: .git in this workspace is a link or a gitfile that points elsewhere; "
                "undo keeps its own copy of the workspace instead"
            )
            return None
        if os.path.lexists(dot_git / "commondir") or not (dot_git / "HEAD").is_file():
            self._notice = (
                "checkpoints: this repository's git data lives outside the workspace (or .git is not a "
                "repository); undo keeps its own copy of the workspace instead"
            )
            return None
        return _Layout(self.workspace, dot_git, dot_git / "index", shadow=False)

    def _shadow_layout(self) -> _Layout:
        key = hashlib.sha256(os.fsencode(self.workspace)).hexdigest()[:16]
        git_dir = self.data_dir / "shadow" / f"{key}.git"
        if not (git_dir / "HEAD").exists():
            git_dir.parent.mkdir(parents=True, exist_ok=True)
            try:
                proc = run_git(
                    "init", "--quiet", "--bare", str(git_dir), cwd=git_dir.parent, env=_clean_env(), filters=[]
                )
            except (OSError, subprocess.TimeoutExpired) as exc:
                raise CheckpointError(f"cannot create the checkpoint repository {git_dir}: {exc}") from None
            if proc.returncode != 0:
                raise CheckpointError(f"cannot create the checkpoint repository {git_dir}: {_first_line(proc.stderr)}")
            (git_dir / "localagent-workspace").write_text(f"{self.workspace}\n", encoding="utf-8")
        excludes = list(_SHADOW_EXCLUDES)
        data_dir = self.data_dir.resolve()
        if data_dir.is_relative_to(self.workspace) and data_dir != self.workspace:
            excludes.append("/" + data_dir.relative_to(self.workspace).as_posix() + "/")
        info = git_dir / "info"
        info.mkdir(exist_ok=True)
        (info / "exclude").write_text("\n".join(excludes) + "\n", encoding="utf-8")
        return _Layout(self.workspace, git_dir, git_dir / "index", shadow=True)

    def git(
        self,
        *args: str,
        index: Path | None = None,
        stdin: bytes | None = None,
        extra_env: dict[str, str] | None = None,
    ) -> bytes:
        layout = self.layout
        env = _clean_env()
        env["GIT_DIR"] = str(layout.git_dir)
        env["GIT_WORK_TREE"] = str(layout.work_tree)
        if index is not None:
            env["GIT_INDEX_FILE"] = str(index)
        env.update(extra_env or {})
        try:
            proc = run_git(*args, cwd=layout.work_tree, env=env, input=stdin, options=_OPTIONS)
        except FileNotFoundError as exc:
            raise CheckpointError("git is not installed; checkpoints and undo need it") from exc
        except subprocess.TimeoutExpired:
            raise CheckpointError(
                f"git {args[0]} did not finish in {GIT_TIMEOUT_SECONDS:.0f} s in {layout.work_tree} "
                "(a FIFO where a file should be?)"
            ) from None
        if proc.returncode != 0:
            raise CheckpointError(f"git {args[0]} failed in {layout.work_tree}: {_first_line(proc.stderr)}")
        return proc.stdout

    def snapshot_tree(self, scratch: Path) -> str:
        """Write the working tree (tracked + untracked, minus ignored) as a tree object."""
        layout = self.layout
        index = scratch / "index"
        if layout.seed_index.is_file():
            shutil.copyfile(layout.seed_index, index)
        self.git("add", "--all", index=index)
        tree = self.git("write-tree", index=index).decode().strip()
        if layout.shadow:
            # The shadow's own index is private: keep its stat cache warm for the next snapshot.
            keep = layout.git_dir / f"index.{os.getpid()}.tmp"
            shutil.copyfile(index, keep)
            os.replace(keep, layout.seed_index)
        return tree

    def tree_changes(self, current: str, target: str) -> tuple[list[str], list[str]]:
        """Paths to delete and paths to write to turn `current` into `target` (gitlinks skipped)."""
        out = self.git("diff-tree", "-r", "-z", "--no-renames", current, target)
        fields = out.split(b"\0")
        to_remove: list[str] = []
        to_write: list[str] = []
        for meta, raw_path in zip(fields[0::2], fields[1::2], strict=False):
            if not meta.startswith(b":"):
                continue
            old_mode, new_mode, _old, _new, status = meta[1:].decode().split(" ")
            if _GITLINK_MODE in (old_mode, new_mode):
                # A nested repository is the user's business; never delete or rewrite it.
                continue
            path = os.fsdecode(raw_path)
            if status == "D":
                to_remove.append(path)
            else:
                to_write.append(path)
        return to_remove, to_write

    def outside_paths(self, to_remove: list[str], to_write: list[str]) -> list[str]:
        """The paths of a restore that would land outside the work tree (through a symlinked
        folder, or `..`). A folder that the same restore removes first does not count: what is
        written there afterwards is a new folder in the work tree."""
        root = self.layout.work_tree
        removed = set(to_remove)
        return [path for path in [*to_remove, *to_write] if not _lands_inside(root, path, removed)]

    def remove_file(self, relative: str) -> None:
        """Remove one file of the work tree, and the folders it leaves empty.

        Each folder on the way is opened without following a symlink, so a folder swapped for a
        link while the restore runs (a command's background job) cannot lead the removal out."""
        root = self.layout.work_tree
        parts = PurePosixPath(relative).parts
        if not parts or ".." in parts:
            return
        fds = [os.open(root, os.O_RDONLY | os.O_DIRECTORY)]
        try:
            for part in parts[:-1]:
                try:
                    fds.append(os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fds[-1]))
                except OSError:
                    return  # the folder is gone, or is no longer a folder: nothing of ours is there
            try:
                os.unlink(parts[-1], dir_fd=fds[-1])
            except (FileNotFoundError, IsADirectoryError, PermissionError):
                pass
            # Folders that only held removed files go too, as they did not exist at the checkpoint.
            for depth in range(len(parts) - 1, 0, -1):
                try:
                    os.rmdir(parts[depth - 1], dir_fd=fds[depth - 1])
                except OSError:
                    break
        finally:
            for fd in fds:
                os.close(fd)


def _lands_inside(root: Path, relative: str, removed: set[str]) -> bool:
    """Whether the folder `relative` is written in resolves inside `root`, once the folders
    (symlinks, files) in `removed` are gone."""
    parts = PurePosixPath(relative).parts
    if not parts or PurePosixPath(relative).is_absolute() or ".." in parts:
        return False
    depth = len(parts) - 1
    for prefix_len in range(1, len(parts)):
        if "/".join(parts[:prefix_len]) in removed:
            depth = prefix_len - 1
            break
    return Path(os.path.realpath(root.joinpath(*parts[:depth]))).is_relative_to(root)


def _enclosing_repository(workspace: Path) -> Path | None:
    for parent in workspace.parents:
        if os.path.lexists(parent / ".git"):
            return parent
    return None


def _clean_env() -> dict[str, str]:
    # Hardened (see tools.safe_git); checkpoint commits must work without the user's identity.
    return git_env(
        GIT_AUTHOR_NAME="localagent",
        GIT_AUTHOR_EMAIL="localagent@localhost",
        GIT_COMMITTER_NAME="localagent",
        GIT_COMMITTER_EMAIL="localagent@localhost",
    )


def _first_line(stderr: bytes) -> str:
    for line in stderr.decode("utf-8", "replace").splitlines():
        if line.strip():
            return line.strip()
    return "no error message"
