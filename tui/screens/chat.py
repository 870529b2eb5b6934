"""The conversation screen: the chat, the prompt and the metrics panel.

Agent work runs in workers (exclusive per group, never taking the app down on error); their
failures arrive as ``Worker.StateChanged`` and are shown in the conversation. The agent itself is a
plain object: this screen iterates its event stream, and answers approval requests by resolving
the future the agent awaits.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from types import AsyncGeneratorType
from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Footer, Static
from textual.worker import Worker, WorkerState

from agent.events import (
    ApprovalRequested,
    ErrorEvent,
    Event,
    MessageAppended,
    Metrics,
    Notice,
    PromptProgress,
    ReasoningDelta,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
    TurnFinished,
    TurnStarted,
)
from tui import commands, reports
from tui.messages import PromptSubmitted
from tui.runtime import TuiAgent, TuiRuntime
from tui.screens import chat_commands
from tui.screens.approval import ApprovalScreen
from tui.widgets.conversation import Conversation
from tui.widgets.metrics_panel import MetricsPanel
from tui.widgets.prompt_input import PromptInput

AGENT_GROUP = "agent"
MODES = commands.MODE_NAMES
CommandHandler = Callable[[tuple[str, ...]], Awaitable[None]]


class ChatScreen(Screen[None]):
    CSS_PATH = "chat.tcss"
    BINDINGS = [Binding("escape", "cancel_turn", "Cancel turn")]

    def __init__(self, label: str = "") -> None:
        super().__init__()
        self.label = label
        self.runtime: TuiRuntime | None = None
        # Prompts and commands taken so far (tests wait on it instead of sleeping).
        self.submissions = 0

    def compose(self) -> ComposeResult:
        with Horizontal(id="body"):
            with Vertical(id="main"):
                yield Static(id="title")
                yield Conversation(id="conversation")
                yield PromptInput(id="prompt", placeholder="Ask the agent, or type /help")
            yield MetricsPanel(id="metrics", label=self.label)
        yield Footer()

    def on_mount(self) -> None:
        self._update_title()
        self.prompt.focus()

    # -- parts -----------------------------------------------------------------------------------

    @property
    def conversation(self) -> Conversation:
        return self.query_one(Conversation)

    @property
    def metrics(self) -> MetricsPanel:
        return self.query_one(MetricsPanel)

    @property
    def prompt(self) -> PromptInput:
        return self.query_one(PromptInput)

    @property
    def agent(self) -> TuiAgent:
        assert self.runtime is not None
        return self.runtime.agent

    @property
    def turn_running(self) -> bool:
        return any(self._agent_workers())

    def _agent_workers(self) -> list[Worker[Any]]:
        return [w for w in self.app.workers if w.group == AGENT_GROUP and w.node is self and not w.is_finished]

    def _update_title(self) -> None:
        parts = ["localagent"]
        if self.label:
            parts.append(self.label)
        if self.runtime is not None:
            parts.append(f"mode {reports.mode_name(self.agent)}")
            parts.append(f"session {self.runtime.session_id}")
        else:
            parts.append("waiting for the server")
        self.query_one("#title", Static).update(Text(" · ".join(parts)))

    # -- the runtime arrives ---------------------------------------------------------------------

    async def attach(self, runtime: TuiRuntime) -> None:
        self.runtime = runtime
        agent = self.agent
        self.metrics.model.n_ctx = agent.n_ctx
        self.metrics.model.set_totals(agent.totals)
        if runtime.server is None or runtime.server.supervisor is None:
            self.metrics.set_unmanaged()
        else:
            self.metrics.apply_status(runtime.server.supervisor.status)
        self.metrics.refresh_now()
        self._update_title()
        await self._show_history(agent.messages)
        for note in runtime.notes:
            await self.conversation.add_notice(str(note), "warning")
        self.prompt.focus()

    async def _show_history(self, messages: list[dict[str, Any]]) -> None:
        """A resumed session: show the conversation so far and seed the prompt history."""
        prompts = await self.conversation.replay(messages)
        if prompts:
            self.prompt.remember(prompts)
            await self.conversation.add_notice(f"resumed session {self.runtime.session_id if self.runtime else ''}")

    # -- input -----------------------------------------------------------------------------------

    @on(PromptSubmitted)
    async def _submitted(self, message: PromptSubmitted) -> None:
        message.stop()
        try:
            await self._take(message.text)
        finally:
            self.submissions += 1

    async def _take(self, text: str) -> None:
        command = commands.parse(text)
        if command is not None:
            await self.run_command(command)
            return
        if self.runtime is None:
            await self.conversation.add_notice("the model server is not ready yet", "warning")
            return
        if self.turn_running:
            await self.conversation.add_notice("a turn is running: wait for it, or press Esc to cancel it", "warning")
            return
        text = commands.unescape(text)
        await self.conversation.add_user(text)
        self.run_turn(text)

    def action_cancel_turn(self) -> bool:
        """Cancel the running turn (or /compact); the session and its history stay."""
        workers = self._agent_workers()
        for worker in workers:
            worker.cancel()
        return bool(workers)

    # -- running the agent -----------------------------------------------------------------------

    @work(exclusive=True, group=AGENT_GROUP, exit_on_error=False, name="turn")
    async def run_turn(self, text: str) -> None:
        await self.consume(self.agent.run_turn(text))

    @work(exclusive=True, group=AGENT_GROUP, exit_on_error=False, name="compact")
    async def compact(self) -> None:
        await self.conversation.add_notice("compacting the conversation…")
        await self.consume(self.agent.compact_now())

    async def consume(self, events: AsyncIterator[Event]) -> None:
        """Show every event; when one asks for approval, ask the user before taking the next."""
        try:
            while True:
                try:
                    event = await anext(events)
                except StopAsyncIteration:
                    break
                await self.show_event(event)
                if isinstance(event, ApprovalRequested):
                    answer = await self.app.push_screen_wait(ApprovalScreen(event))
                    if not event.future.done():
                        event.future.set_result(answer)
                    block = self.conversation.tool_blocks.get(event.call_id)
                    if block is not None:
                        block.set_running()
        except asyncio.CancelledError:
            await self._after_cancel(events)
            raise

    async def _after_cancel(self, events: AsyncIterator[Event]) -> None:
        if isinstance(self.app.screen, ApprovalScreen):
            self.app.pop_screen()
        # The stream may be parked at a yield (we were awaiting the UI, not the agent): throw the
        # cancellation in there so the agent records results for pending calls and stays valid.
        if isinstance(events, AsyncGeneratorType) and events.ag_frame is not None and not events.ag_running:
            try:
                await events.athrow(asyncio.CancelledError())
            except (asyncio.CancelledError, StopAsyncIteration):
                pass
        conversation = self.conversation
        await conversation.end_assistant()
        for block in conversation.tool_blocks.values():
            if block.state in ("running", "waiting"):
                await block.finish("cancelled", True, 0.0)
        self.metrics.turn_finished(self.agent.totals)
        await conversation.add_notice("cancelled; the conversation is kept", "warning")

    async def show_event(self, event: Event) -> None:
        """Route one agent event to the widgets. Text and metrics come first: they are most events."""
        conversation = self.conversation
        if isinstance(event, TextDelta):
            await conversation.write_text(event.text)
        elif isinstance(event, Metrics):
            self.metrics.record(event)
        elif isinstance(event, PromptProgress):
            self.metrics.reading(event.processed, event.total)
        elif isinstance(event, ReasoningDelta):
            await conversation.write_reasoning(event.text)
        elif isinstance(event, ToolCallStarted):
            await conversation.start_tool(event.call_id, event.name, event.summary, event.arguments)
        elif isinstance(event, ApprovalRequested):
            (await conversation.tool_block(event.call_id, event.name)).set_waiting()
        elif isinstance(event, ToolCallFinished):
            block = await conversation.tool_block(event.call_id, event.name)
            diff = event.metadata.get("diff") if isinstance(event.metadata, dict) else None
            await block.finish(event.output, event.is_error, event.duration_s, diff if isinstance(diff, str) else None)
        elif isinstance(event, MessageAppended):
            role = event.message.get("role")
            if role == "assistant":
                await conversation.end_assistant()
                self.metrics.request_finished()
            elif role in ("user", "tool"):
                self.metrics.request_started()
        elif isinstance(event, TurnStarted):
            self.metrics.turn_started()
        elif isinstance(event, Notice):
            await conversation.add_notice(event.text)
        elif isinstance(event, ErrorEvent):
            await conversation.add_notice(event.message, "error")
        elif isinstance(event, TurnFinished):
            await conversation.end_assistant()
            totals = self.agent.totals if self.runtime is not None else {}
            self.metrics.turn_finished(totals)
            await conversation.add_notice(reports.turn_summary(event), "summary")
            if event.reason not in ("done", "cancelled"):
                await conversation.add_notice(f"stopped ({event.reason}): {event.message}", "warning")

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        worker = event.worker
        if worker.node is not self or event.state != WorkerState.ERROR:
            return
        event.stop()
        self.metrics.model.request_finished()
        self.metrics.refresh_now()
        self.run_worker(
            self.conversation.add_notice(f"{worker.name} failed: {worker.error}", "error"), exit_on_error=False
        )

    # -- slash commands --------------------------------------------------------------------------

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
        await self.conversation.clear()
        self.metrics.model.reset_conversation()
        self.metrics.refresh_now()
        await self.conversation.add_notice("conversation cleared; the files are as they were")

    async def _cmd_compact(self, args: tuple[str, ...]) -> None:
        self.compact()

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
