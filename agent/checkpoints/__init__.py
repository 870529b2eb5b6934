"""Per-turn snapshots of the working tree and undo: the store (``store``), the git repository the
snapshots live in (``repository``), and the pre-images of files git does not track
(``preimages``)."""

from agent.checkpoints.repository import CheckpointError
from agent.checkpoints.store import REF_NAMESPACE, Checkpoint, CheckpointStore

__all__ = ["REF_NAMESPACE", "Checkpoint", "CheckpointError", "CheckpointStore"]
