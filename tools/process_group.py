"""Stop a command together with everything it started (its whole process group)."""

from __future__ import annotations

import asyncio
import os
import signal

TERMINATE_GRACE_SECONDS = 2.0


def signal_group(group_id: int, sig: signal.Signals) -> bool:
    """Send `sig` to the group; False when the group no longer exists."""
    try:
        os.killpg(group_id, sig)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return False


async def terminate_group(group_id: int, leader_exited: asyncio.Event, grace: float = TERMINATE_GRACE_SECONDS) -> None:
    """SIGTERM the group, give the leader `grace` seconds to exit, then SIGKILL what is left."""
    signal_group(group_id, signal.SIGTERM)
    try:
        await asyncio.wait_for(leader_exited.wait(), grace)
    except TimeoutError:
        pass
    # Children may ignore SIGTERM or outlive the leader, so the group is always killed.
    signal_group(group_id, signal.SIGKILL)
