"""What the chat screen's slower commands do: /undo, /diff, /server restart, /server logs, !command.

The screen parses and dispatches commands (``tui.commands``) and runs these in its workers; each
writes its outcome into the conversation.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from pathlib import Path
from typing import TYPE_CHECKING

from server.http import tail_lines
from tools.bash_tool import BashTool
from tui.attachments import shell_note
from tui.widgets.conversation import Conversation
from tui.widgets.diff_view import DiffView

if TYPE_CHECKING:
    from agent.checkpoints import CheckpointStore
    from server.manager import ServerHandle
    from tools.base import ToolContext

LOG_LINES = 25
NO_CHECKPOINTS = "this session keeps no checkpoints"
# The block a ``!command`` shows in: named like a tool, so it reads "✓ ! ls -la  0.1s".
SHELL_BLOCK_NAME = "!"
_shell_runs = itertools.count(1)


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


async def shell(conversation: Conversation, ctx: ToolContext, command: str) -> str:
    """Run a command the person typed after ``!``: the agent's own bash tool, in its context.

    Same tool, same sandbox and filtered environment as the agent's bash, so a repository gains
    nothing by asking its user to type something; no approval, because the person typed it. It may
    run up to the longest timeout the agent's bash allows (Esc cancels it sooner). Returns the note
    the model gets with the next message.
    """
    block = await conversation.start_tool(f"user-shell-{next(_shell_runs)}", SHELL_BLOCK_NAME, command, {})
    started = time.monotonic()
    try:
        result = await BashTool().run({"command": command, "timeout": ctx.bash_max_timeout}, ctx)
    except asyncio.CancelledError:
        await block.finish("cancelled", True, time.monotonic() - started)
        raise
    await block.finish(result.output, result.is_error, time.monotonic() - started)
    return shell_note(command, result.output)
