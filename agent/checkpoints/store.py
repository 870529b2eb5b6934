"""Per-turn snapshots of the whole working tree, kept in private git refs, and undo.

A checkpoint is a commit under `refs/localagent/checkpoints/<session-id>/<n>` built with a
temporary index file, so the user's branch, HEAD, index and stash are never touched. Because the
snapshot is taken from the files on disk, changes made by shell commands are captured too, not
only those made by the edit tools. Outside a git repository a private bare "shadow" repository
under the data directory plays the same role.
"""

from __future__ import annotations

import asyncio
import os
import re
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from agent.checkpoints.preimages import Preimages
from agent.checkpoints.repository import CheckpointError, SnapshotRepo
from agent.text_lines import one_line

# Re-exported: tests patch the timeout here (the message that names it is agent.checkpoints.repository's).
from tools.safe_git import GIT_TIMEOUT_SECONDS  # noqa: F401  # re-exported for tests that patch it here

__all__ = ["REF_NAMESPACE", "Checkpoint", "CheckpointError", "CheckpointStore"]

REF_NAMESPACE = "refs/localagent/checkpoints"

_SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


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
        self._repo = SnapshotRepo(self.workspace, self.data_dir)
        self._preimages = Preimages(self.workspace, session_id, self.data_dir)
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
        return self._repo.layout.shadow

    @property
    def notice(self) -> str | None:
        """One line for the person when the workspace's repository cannot hold the checkpoints."""
        with self._lock:
            return self._repo.notice

    def create_sync(self, label: str) -> Checkpoint:
        with self._lock, self._scratch() as scratch:
            tree = self._repo.snapshot_tree(scratch)
            existing = self.list()
            number = existing[-1].number + 1 if existing else 1
            subject = one_line(label) or f"checkpoint {number}"
            message = f"{subject}\n\nlocalagent checkpoint {number} of session {self.session_id}\n"
            parent = ["-p", existing[-1].commit] if existing else []
            # Commit dates have whole seconds; pin ours so list() and create() agree exactly.
            created = datetime.now(UTC).replace(microsecond=0)
            stamp = f"{int(created.timestamp())} +0000"
            dates = {"GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp}
            commit = (
                self._repo.git("commit-tree", tree, *parent, stdin=message.encode(), extra_env=dates).decode().strip()
            )
            checkpoint = Checkpoint(self.session_id, number, subject, commit, created)
            # The empty old value makes git refuse to overwrite a ref someone else just made.
            self._repo.git("update-ref", "-m", "localagent checkpoint", checkpoint.ref, commit, "")
            self._write_record(checkpoint)
            self._current = number
            return checkpoint

    def list(self) -> list[Checkpoint]:
        """This session's checkpoints, oldest first."""
        prefix = f"{REF_NAMESPACE}/{self.session_id}/"
        fmt = "%(refname)%00%(objectname)%00%(committerdate:unix)%00%(contents:subject)"
        with self._lock:
            out = self._repo.git("for-each-ref", f"--format={fmt}", prefix).decode("utf-8", "replace")
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
        self._check_record(checkpoint)
        with self._lock, self._scratch() as scratch:
            current = self._repo.snapshot_tree(scratch)
            target = self._tree_of(checkpoint)
            to_remove, to_write = self._repo.tree_changes(current, target)
            outside = self._repo.outside_paths(to_remove, to_write)
            if outside:
                # Nothing is touched: a restore that would reach out of the workspace is an attack
                # (a folder swapped for a symlink), never a step back.
                raise CheckpointError(
                    f"restore stopped before changing anything: {outside[0]!r} resolves outside the "
                    f"workspace {self.workspace} (a symlinked folder?); remove that link and try again"
                )
            for relative in to_remove:
                self._repo.remove_file(relative)
            if to_write:
                target_index = scratch / "target-index"
                self._repo.git("read-tree", target, index=target_index)
                paths = b"\0".join(os.fsencode(p) for p in to_write) + b"\0"
                self._repo.git("checkout-index", "-f", "-z", "--stdin", index=target_index, stdin=paths)

    def undo_last_turn_sync(self) -> Checkpoint | None:
        """Restore the newest checkpoint and drop it, so repeated calls step back turn by turn.
        Files the agent's own tools changed come back too, even those git ignores."""
        with self._lock:
            existing = self.list()
            if not existing:
                return None
            newest = existing[-1]
            self.restore_sync(newest)
            self._preimages.restore(newest.number)
            self._current = None
            self._repo.git("update-ref", "-d", newest.ref, newest.commit)
            self._record_path(newest.number).unlink(missing_ok=True)
            return newest

    def preserve_before_write(self, path: Path) -> None:
        """Called by the file tools before they change ``path``: keep its bytes as they were
        before this turn (or that it did not exist), once per turn. Snapshots leave ignored files
        out (a `.env`, build output), so this is how undo restores those."""
        with self._lock:
            number = self._current_number()
            if number is not None:
                self._preimages.keep(number, path)

    def _current_number(self) -> int | None:
        if self._current is None:
            existing = self.list()
            self._current = existing[-1].number if existing else None
        return self._current

    def diff_since_sync(self, checkpoint: Checkpoint) -> str:
        """Unified diff from the checkpoint to the working tree as it is now."""
        with self._lock, self._scratch() as scratch:
            base = self._tree_of(checkpoint)
            current = self._repo.snapshot_tree(scratch)
            out = self._repo.git("diff", "--no-color", "--no-ext-diff", "--no-textconv", base, current)
        return out.decode("utf-8", "replace")

    def clear(self) -> None:
        """Forget every checkpoint of this session (the files are not touched)."""
        with self._lock:
            for checkpoint in self.list():
                self._repo.git("update-ref", "-d", checkpoint.ref, checkpoint.commit)
                self._record_path(checkpoint.number).unlink(missing_ok=True)

    # -- helpers ----------------------------------------------------------------------------

    def _record_path(self, number: int) -> Path:
        # Outside the workspace: the refs and objects of a repository are writable by the
        # commands the agent runs, so a checkpoint is trusted only as the commit recorded here.
        return self.data_dir / "records" / self.session_id / str(number)

    def _write_record(self, checkpoint: Checkpoint) -> None:
        path = self._record_path(checkpoint.number)
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        partial = path.with_suffix(".partial")
        partial.write_text(checkpoint.commit + "\n", encoding="utf-8")
        os.replace(partial, path)

    def _check_record(self, checkpoint: Checkpoint) -> None:
        try:
            recorded = self._record_path(checkpoint.number).read_text(encoding="utf-8").strip()
        except OSError:
            recorded = None
        if recorded != checkpoint.commit:
            raise CheckpointError(
                f"checkpoint {checkpoint.number} is not the one localagent made (its ref was changed or "
                "made from inside the workspace); undo refuses to restore it"
            )

    @contextmanager
    def _scratch(self) -> Iterator[Path]:
        with tempfile.TemporaryDirectory(prefix="localagent-checkpoint-") as name:
            yield Path(name)

    def _tree_of(self, checkpoint: Checkpoint) -> str:
        try:
            return self._repo.git("rev-parse", "--verify", "--quiet", f"{checkpoint.commit}^{{tree}}").decode().strip()
        except CheckpointError:
            raise CheckpointError(
                f"checkpoint {checkpoint.number} ({checkpoint.commit[:12]}) is not in {self._repo.layout.git_dir}"
            ) from None
