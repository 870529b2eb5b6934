"""Per-turn snapshots of the working tree and undo: the store (``store``), the git repository the
snapshots live in (``repository``), and the pre-images of files git does not track
(``preimages``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tools.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from agent.checkpoints.repository import CheckpointError
    from agent.checkpoints.store import REF_NAMESPACE, Checkpoint, CheckpointStore

# Loaded on first use: importing the face costs nothing until a name is read.
_EXPORTS = {
    "CheckpointError": "agent.checkpoints.repository",
    "REF_NAMESPACE": "agent.checkpoints.store",
    "Checkpoint": "agent.checkpoints.store",
    "CheckpointStore": "agent.checkpoints.store",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

__all__ = ["REF_NAMESPACE", "Checkpoint", "CheckpointError", "CheckpointStore"]
