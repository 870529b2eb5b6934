"""Per-turn snapshots of the whole working tree, kept in private git refs, and undo.

A checkpoint is a commit under `refs/localagent/checkpoints/<session-id>/<n>` built with a
temporary index file, so the user's branch, HEAD, index and stash are never touched. Because the
snapshot is taken from the files on disk, changes made by shell commands are captured too, not
only those made by the edit tools. Outside a git repository a private bare "shadow" repository
under the data directory plays the same role.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from agent.errors import AgentError
from tools.safe_git import GIT_TIMEOUT_SECONDS, git_env, run_git

__all__ = ["Checkpoint", "CheckpointError", "CheckpointStore", "REF_NAMESPACE"]

REF_NAMESPACE = "refs/localagent/checkpoints"

# Byte-exact round trips: no line-ending rewriting, no refusal over line endings, no chatter.
_CONFIG_FLAGS = (
    "-c", "core.autocrlf=false",
    "-c", "core.safecrlf=false",
    "-c", "advice.addEmbeddedRepo=false",
    "-c", "core.quotepath=false",
)  # fmt: skip

_GITLINK_MODE = "160000"
_SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
# Directories no one wants snapshotted when the workspace is not a git repository.
_SHADOW_EXCLUDES = (".git", ".venv/", "venv/", "node_modules/", "__pycache__/", ".mypy_cache/", ".pytest_cache/")


class CheckpointError(AgentError):
    """A checkpoint could not be created, listed or restored."""


@dataclass(frozen=True)
class Checkpoint:
    session_id: str
    number: int
    label: str
    commit: str
    created: datetime

    @property
    def ref(self) -> str:
        return f"{REF_NAMESPACE}/{self.session_id}/{self.number}"


@dataclass(frozen=True)
class _Layout:
    work_tree: Path
    git_dir: Path
    # The index whose stat cache makes `git add -A` fast; copied, never written, for a user repo.
    seed_index: Path
    shadow: bool


class CheckpointStore:
    """Checkpoints of one session in one workspace.

    The async methods run git in a worker thread; the `_sync` variants are for callers that
    are not in an event loop (the CLI).
    """

    def __init__(self, workspace: Path, session_id: str, data_dir: Path) -> None:
        if not _SESSION_ID.fullmatch(session_id) or ".." in session_id or session_id.endswith((".", ".lock")):
            raise CheckpointError(f"session id {session_id!r} cannot name a checkpoint ref")
        self.workspace = Path(workspace).resolve()
        self.session_id = session_id
        self.data_dir = Path(data_dir)
        self._layout: _Layout | None = None
        self._current: int | None = None  # the checkpoint this turn's writes belong to
        # One git operation at a time: numbering and restores must not interleave.
        self._lock = threading.RLock()

    # -- public API -------------------------------------------------------------------------

    async def create(self, label: str) -> Checkpoint:
        return await asyncio.to_thread(self.create_sync, label)

    async def restore(self, checkpoint: Checkpoint) -> None:
        await asyncio.to_thread(self.restore_sync, checkpoint)

    async def undo_last_turn(self) -> Checkpoint | None:
        return await asyncio.to_thread(self.undo_last_turn_sync)

    async def diff_since(self, checkpoint: Checkpoint) -> str:
        return await asyncio.to_thread(self.diff_since_sync, checkpoint)

    @property
    def uses_shadow_repository(self) -> bool:
        return self.layout.shadow

    def create_sync(self, label: str) -> Checkpoint:
        with self._lock, self._scratch() as scratch:
            tree = self._snapshot_tree(scratch)
            existing = self.list()
            number = existing[-1].number + 1 if existing else 1
            subject = _one_line(label) or f"checkpoint {number}"
            message = f"{subject}\n\nlocalagent checkpoint {number} of session {self.session_id}\n"
            parent = ["-p", existing[-1].commit] if existing else []
            # Commit dates have whole seconds; pin ours so list() and create() agree exactly.
            created = datetime.now(UTC).replace(microsecond=0)
            stamp = f"{int(created.timestamp())} +0000"
            dates = {"GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp}
            commit = self._git("commit-tree", tree, *parent, stdin=message.encode(), extra_env=dates).decode().strip()
            checkpoint = Checkpoint(self.session_id, number, subject, commit, created)
            # The empty old value makes git refuse to overwrite a ref someone else just made.
            self._git("update-ref", "-m", "localagent checkpoint", checkpoint.ref, commit, "")
            self._current = number
            return checkpoint

    def list(self) -> list[Checkpoint]:
        """This session's checkpoints, oldest first."""
        prefix = f"{REF_NAMESPACE}/{self.session_id}/"
        fmt = "%(refname)%00%(objectname)%00%(committerdate:unix)%00%(contents:subject)"
        with self._lock:
            out = self._git("for-each-ref", f"--format={fmt}", prefix).decode("utf-8", "replace")
        found: list[Checkpoint] = []
        for line in out.splitlines():
            refname, commit, stamp, subject = line.split("\0", 3)
            tail = refname.removeprefix(prefix)
            if not tail.isdigit():
                continue
            created = datetime.fromtimestamp(int(stamp or 0), UTC)
            found.append(Checkpoint(self.session_id, int(tail), subject, commit, created))
        return sorted(found, key=lambda c: c.number)

    def restore_sync(self, checkpoint: Checkpoint) -> None:
        """Make the working tree equal to the checkpoint; ignored files and .git are left alone."""
        with self._lock, self._scratch() as scratch:
            current = self._snapshot_tree(scratch)
            target = self._tree_of(checkpoint)
            to_remove, to_write = self._tree_changes(current, target)
            for relative in to_remove:
                self._remove_file(relative)
            if to_write:
                target_index = scratch / "target-index"
                self._git("read-tree", target, index=target_index)
                paths = b"\0".join(os.fsencode(p) for p in to_write) + b"\0"
                self._git("checkout-index", "-f", "-z", "--stdin", index=target_index, stdin=paths)

    def undo_last_turn_sync(self) -> Checkpoint | None:
        """Restore the newest checkpoint and drop it, so repeated calls step back turn by turn.
        Files the agent's own tools changed come back too, even those git ignores."""
        with self._lock:
            existing = self.list()
            if not existing:
                return None
            newest = existing[-1]
            self.restore_sync(newest)
            self._restore_preimages(newest.number)
            self._git("update-ref", "-d", newest.ref, newest.commit)
            return newest

    def preserve_before_write(self, path: Path) -> None:
        """Called by the file tools before they change ``path``: keep its bytes as they were
        before this turn (or that it did not exist), once per turn. Snapshots leave ignored files
        out (a `.env`, build output), so this is how undo restores those."""
        with self._lock:
            number = self._current_number()
            if number is None:
                return
            target = Path(path).resolve()
            if not target.is_relative_to(self.workspace):
                return
            folder = self._preimage_dir(number)
            manifest = self._read_manifest(folder)
            relative = target.relative_to(self.workspace).as_posix()
            if relative in manifest:
                return  # the first version this turn is the one to go back to
            folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            entry: dict[str, str | None] = {"blob": None}
            if target.is_file() and not target.is_symlink():
                blob = hashlib.sha256(relative.encode()).hexdigest()[:24]
                shutil.copyfile(target, folder / blob)
                entry["blob"] = blob
                entry["mode"] = oct(target.stat().st_mode & 0o7777)
            manifest[relative] = entry
            partial = folder / "manifest.json.partial"
            partial.write_text(json.dumps(manifest), encoding="utf-8")
            os.replace(partial, folder / "manifest.json")

    def _current_number(self) -> int | None:
        if self._current is None:
            existing = self.list()
            self._current = existing[-1].number if existing else None
        return self._current

    def _preimage_dir(self, number: int) -> Path:
        return self.data_dir / "preimages" / self.session_id / str(number)

    @staticmethod
    def _read_manifest(folder: Path) -> dict[str, dict[str, str | None]]:
        try:
            data = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def _restore_preimages(self, number: int) -> None:
        folder = self._preimage_dir(number)
        for relative, entry in self._read_manifest(folder).items():
            target = self.workspace / relative
            if not target.resolve().is_relative_to(self.workspace):
                continue
            blob = entry.get("blob") if isinstance(entry, dict) else None
            if blob is None:
                if target.is_file() or target.is_symlink():
                    target.unlink()
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(folder / blob, target)
            if isinstance(entry.get("mode"), str):
                os.chmod(target, int(str(entry["mode"]), 8))
        shutil.rmtree(folder, ignore_errors=True)
        self._current = None

    def diff_since_sync(self, checkpoint: Checkpoint) -> str:
        """Unified diff from the checkpoint to the working tree as it is now."""
        with self._lock, self._scratch() as scratch:
            base = self._tree_of(checkpoint)
            current = self._snapshot_tree(scratch)
            out = self._git("diff", "--no-color", "--no-ext-diff", "--no-textconv", base, current)
        return out.decode("utf-8", "replace")

    def clear(self) -> None:
        """Forget every checkpoint of this session (the files are not touched)."""
        with self._lock:
            for checkpoint in self.list():
                self._git("update-ref", "-d", checkpoint.ref, checkpoint.commit)

    # -- repository layout ------------------------------------------------------------------

    @property
    def layout(self) -> _Layout:
        if self._layout is None:
            self._layout = self._discover() or self._shadow_layout()
        return self._layout

    def _discover(self) -> _Layout | None:
        try:
            proc = run_git(
                "rev-parse", "--show-toplevel", "--absolute-git-dir", "--git-path", "index",
                cwd=self.workspace, env=_clean_env(), filters=[],
            )
        except FileNotFoundError as exc:
            raise CheckpointError("git is not installed; checkpoints and undo need it") from exc
        except subprocess.TimeoutExpired:
            raise CheckpointError(f"git did not answer in {self.workspace} (a FIFO in its config?)") from None
        lines = os.fsdecode(proc.stdout).splitlines()
        if proc.returncode != 0 or len(lines) != 3:
            return None
        top, git_dir, index = lines
        return _Layout(Path(top), Path(git_dir), (self.workspace / index).resolve(), shadow=False)

    def _shadow_layout(self) -> _Layout:
        key = hashlib.sha256(os.fsencode(self.workspace)).hexdigest()[:16]
        git_dir = self.data_dir / "shadow" / f"{key}.git"
        if not (git_dir / "HEAD").exists():
            git_dir.parent.mkdir(parents=True, exist_ok=True)
            try:
                proc = run_git("init", "--quiet", "--bare", str(git_dir), cwd=git_dir.parent, env=_clean_env(), filters=[])
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

    # -- git plumbing -----------------------------------------------------------------------

    def _git(
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
            proc = run_git(*_CONFIG_FLAGS, *args, cwd=layout.work_tree, env=env, input=stdin)
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

    @contextmanager
    def _scratch(self) -> Iterator[Path]:
        with tempfile.TemporaryDirectory(prefix="localagent-checkpoint-") as name:
            yield Path(name)

    def _snapshot_tree(self, scratch: Path) -> str:
        """Write the working tree (tracked + untracked, minus ignored) as a tree object."""
        layout = self.layout
        index = scratch / "index"
        if layout.seed_index.is_file():
            shutil.copyfile(layout.seed_index, index)
        self._git("add", "--all", index=index)
        tree = self._git("write-tree", index=index).decode().strip()
        if layout.shadow:
            # The shadow's own index is private: keep its stat cache warm for the next snapshot.
            keep = layout.git_dir / f"index.{os.getpid()}.tmp"
            shutil.copyfile(index, keep)
            os.replace(keep, layout.seed_index)
        return tree

    def _tree_of(self, checkpoint: Checkpoint) -> str:
        try:
            return self._git("rev-parse", "--verify", "--quiet", f"{checkpoint.commit}^{{tree}}").decode().strip()
        except CheckpointError:
            raise CheckpointError(
                f"checkpoint {checkpoint.number} ({checkpoint.commit[:12]}) is not in {self.layout.git_dir}"
            ) from None

    def _tree_changes(self, current: str, target: str) -> tuple[list[str], list[str]]:
        """Paths to delete and paths to write to turn `current` into `target` (gitlinks skipped)."""
        out = self._git("diff-tree", "-r", "-z", "--no-renames", current, target)
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

    def _remove_file(self, relative: str) -> None:
        root = self.layout.work_tree
        path = root / relative
        if path.is_symlink() or path.is_file():
            path.unlink()
        # Directories that only held removed files go too, as they did not exist at the checkpoint.
        parent = path.parent
        while parent != root and parent.is_relative_to(root):
            try:
                parent.rmdir()
            except OSError:
                break
            parent = parent.parent


def _clean_env() -> dict[str, str]:
    # Hardened (see tools.safe_git); checkpoint commits must work without the user's identity.
    return git_env(
        GIT_AUTHOR_NAME="localagent",
        GIT_AUTHOR_EMAIL="localagent@localhost",
        GIT_COMMITTER_NAME="localagent",
        GIT_COMMITTER_EMAIL="localagent@localhost",
    )


def _one_line(text: str, limit: int = 200) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _first_line(stderr: bytes) -> str:
    for line in stderr.decode("utf-8", "replace").splitlines():
        if line.strip():
            return line.strip()
    return "no error message"
