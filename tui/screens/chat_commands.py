"""What the chat screen's slower slash commands do: /undo, /diff, /server restart, /server logs.

The screen parses and dispatches commands (``tui.commands``) and runs these in its workers; each
writes its outcome into the conversation.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING

from server.http import tail_lines
from tui.widgets.conversation import Conversation
from tui.widgets.diff_view import DiffView

if TYPE_CHECKING:
    from agent.checkpoints import CheckpointStore
    from server.manager import ServerHandle

LOG_LINES = 25
NO_CHECKPOINTS = "this session keeps no checkpoints"


async def undo(conversation: Conversation, checkpoints: CheckpointStore | None) -> None:
    if checkpoints is None:
        await conversation.add_notice(NO_CHECKPOINTS, "warning")
        return
    restored = await checkpoints.undo_last_turn()
    if restored is None:
        await conversation.add_notice("nothing to undo in this session")
    else:
        await conversation.add_notice(f"restored the files to {restored.label} (the conversation is unchanged)")


async def diff(conversation: Conversation, checkpoints: CheckpointStore | None, last_turn: bool) -> None:
    if checkpoints is None:
        await conversation.add_notice(NO_CHECKPOINTS, "warning")
        return
    existing = await asyncio.to_thread(checkpoints.list)
    if not existing:
        await conversation.add_notice("no changes yet: nothing has run in this session")
        return
    base = existing[-1] if last_turn else existing[0]
    changes = await checkpoints.diff_since(base)
    if not changes.strip():
        await conversation.add_notice(f"no changes since {base.label}")
        return
    await conversation.add_notice(f"changes since {base.label}:")
    await conversation.add(DiffView(changes))


async def restart_server(conversation: Conversation, server: ServerHandle | None) -> None:
    supervisor = server.supervisor if server is not None else None
    if supervisor is None:
        await conversation.add_notice(
            "this server is not managed by this session (attached or --base-url); restart it where it runs",
            "warning",
        )
        return
    await conversation.add_notice("restarting the model server…")
    await supervisor.restart()
    await conversation.add_notice("the model server is back")


async def server_logs(conversation: Conversation, path: Path | None) -> None:
    if path is None:
        await conversation.add_notice("no log file: this server was not started by localagent", "warning")
        return
    lines = await asyncio.to_thread(tail_lines, path, LOG_LINES)
    if not lines and not path.is_file():
        await conversation.add_notice(f"cannot read the log {path}", "warning")
        return
    await conversation.add_notice(f"{path} (last {len(lines)} lines):\n" + "\n".join(lines), "help")
