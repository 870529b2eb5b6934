"""The chat screen's slash commands: checks, then one handler per entry of ``commands.COMMANDS``.

A mixin of ``ChatScreen`` (it uses the screen's conversation, metrics and runtime); the slower
commands' work is in ``chat_commands``, run in workers so the prompt stays live.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from textual import work

from tui import commands, reports
from tui.init_prompt import init_prompt
from tui.screens import chat_commands

if TYPE_CHECKING:
    from tui.runtime import TuiAgent, TuiRuntime
    from tui.widgets.conversation import Conversation
    from tui.widgets.metrics_panel import MetricsPanel

CommandHandler = Callable[[tuple[str, ...]], Awaitable[None]]
MODES = commands.MODE_NAMES


class SlashCommands:
    """Mixed into ``ChatScreen``; the names below are the screen's."""

    if TYPE_CHECKING:
        runtime: TuiRuntime | None
        pending_notes: list[str]
        app: Any
        # Workers on the screen (Textual's @work), which return the worker they start.
        compact: Callable[[], object]
        run_turn: Callable[[str], object]

        @property
        def conversation(self) -> Conversation: ...
        @property
        def metrics(self) -> MetricsPanel: ...
        @property
        def agent(self) -> TuiAgent: ...
        @property
        def turn_running(self) -> bool: ...
        def _update_title(self) -> None: ...

    async def run_command(self, command: commands.SlashCommand) -> None:
        conversation = self.conversation
        if not command.known:
            await conversation.add_notice(f"unknown command /{command.name}; /help lists them", "warning")
            return
        if command.name not in ("help", "quit") and self.runtime is None:
            await conversation.add_notice("the model server is not ready yet", "warning")
            return
        if self.turn_running and command.name not in commands.WHILE_RUNNING:
            await conversation.add_notice(f"/{command.name} waits for the turn to end (Esc cancels it)", "warning")
            return
        await self._handlers()[command.name](command.args)

    def _handlers(self) -> dict[str, CommandHandler]:
        """One handler per entry of ``commands.COMMANDS``."""
        return {
            "undo": self._cmd_undo,
            "diff": self._cmd_diff,
            "clear": self._cmd_clear,
            "compact": self._cmd_compact,
            "init": self._cmd_init,
            "mode": self._cmd_mode,
            "mcp": self._cmd_mcp,
            "server": self._cmd_server,
            "help": self._cmd_help,
            "quit": self._cmd_quit,
        }

    async def _cmd_help(self, args: tuple[str, ...]) -> None:
        await self.conversation.add_notice(commands.help_text(), "help")

    async def _cmd_quit(self, args: tuple[str, ...]) -> None:
        await self.app.run_action("app.quit")

    async def _cmd_clear(self, args: tuple[str, ...]) -> None:
        self.agent.clear()
        self.pending_notes.clear()
        await self.conversation.clear()
        self.metrics.model.reset_conversation()
        self.metrics.refresh_now()
        await self.conversation.add_notice("conversation cleared; the files are as they were")

    async def _cmd_compact(self, args: tuple[str, ...]) -> None:
        self.compact()

    async def _cmd_init(self, args: tuple[str, ...]) -> None:
        ctx = self.agent.tool_ctx
        if ctx is None:
            await self.conversation.add_notice("/init needs a workspace, and this session has none", "warning")
            return
        exists = (ctx.workspace / "AGENTS.md").is_file()
        await self.conversation.add_user("/init")
        what = "improve AGENTS.md" if exists else "survey the repository and write AGENTS.md"
        await self.conversation.add_notice(f"asking the agent to {what}; you approve the file as usual")
        self.run_turn(init_prompt(ctx.workspace))

    async def _cmd_mode(self, args: tuple[str, ...]) -> None:
        if not args:
            await self.conversation.add_notice(f"mode: {reports.mode_name(self.agent)} (choices: {', '.join(MODES)})")
            return
        if args[0] not in MODES:
            await self.conversation.add_notice(f"unknown mode {args[0]!r}; use one of {', '.join(MODES)}", "warning")
            return
        self.agent.set_mode(args[0])
        self._update_title()
        await self.conversation.add_notice(f"mode: {args[0]}")

    async def _cmd_mcp(self, args: tuple[str, ...]) -> None:
        await self.conversation.add_notice(reports.mcp_text(self.runtime), "help")

    async def _cmd_undo(self, args: tuple[str, ...]) -> None:
        self._undo()

    async def _cmd_diff(self, args: tuple[str, ...]) -> None:
        self._diff(bool(args) and args[0] == "last")

    async def _cmd_server(self, args: tuple[str, ...]) -> None:
        what = args[0] if args else "status"
        if what == "status":
            await self.conversation.add_notice(reports.server_text(self.runtime), "help")
        elif what == "restart":
            self._restart_server()
        elif what in ("logs", "log"):
            self._server_logs()
        else:
            await self.conversation.add_notice("usage: /server [status|restart|logs]", "warning")

    @work(group="command", exit_on_error=False, name="undo")
    async def _undo(self) -> None:
        await chat_commands.undo(self.conversation, self.runtime.checkpoints if self.runtime else None)

    @work(group="command", exit_on_error=False, name="diff")
    async def _diff(self, last_turn: bool) -> None:
        await chat_commands.diff(self.conversation, self.runtime.checkpoints if self.runtime else None, last_turn)

    @work(exclusive=True, group="server", exit_on_error=False, name="server restart")
    async def _restart_server(self) -> None:
        await chat_commands.restart_server(self.conversation, self.runtime.server if self.runtime else None)

    @work(group="command", exit_on_error=False, name="server logs")
    async def _server_logs(self) -> None:
        await chat_commands.server_logs(self.conversation, reports.log_path(self.runtime))
