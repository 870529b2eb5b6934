"""The conversation screen: the chat, the prompt and the metrics panel.

Agent work runs in workers (exclusive per group, never taking the app down on error); their
failures arrive as ``Worker.StateChanged`` and are shown in the conversation. The agent itself is a
plain object: this screen iterates its event stream, and answers approval requests by resolving
the future the agent awaits.

A prompt is a slash command (``chat_slash``), a ``!command`` (run at once with the agent's bash
tool; its output waits in ``pending_notes`` and goes to the model with the next message, as the
person saw it, since a note of its own would break the strict user/assistant alternation some
chat templates demand), or a message, whose ``@file`` mentions are read and attached
(``tui.attachments``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
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

from agent.approval import Approval, ApprovalRequest
from agent.events import (
    ApprovalRequested,
    ErrorEvent,
    Event,
    MessageAppended,
    Metrics,
    Notice,
    PromptProgress,
    ReasoningDelta,
    SpeculationChosen,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
    TurnFinished,
    TurnStarted,
)
from tools.terminal_text import one_line_safe, terminal_safe
from tui import attachments, commands, gc_pacing, input_priority, reports
from tui.messages import MentionStarted, PromptSubmitted
from tui.prompt_history import PromptHistory
from tui.runtime import TuiAgent, TuiRuntime, rule_store
from tui.screens import chat_commands
from tui.screens.approval import ApprovalScreen
from tui.screens.chat_slash import SlashCommands
from tui.screens.file_picker import FilePickerScreen
from tui.screens.save_rule import SaveRuleScreen
from tui.widgets.conversation import Conversation
from tui.widgets.metrics_panel import MetricsPanel
from tui.widgets.prompt_input import PromptInput

AGENT_GROUP = "agent"
# The longest the event stream holds the event loop: when the agent has events ready back to back
# (a burst from the server), keys and repaints still get their turn this often.
YIELD_EVERY_S = 0.008
# After a turn, the full garbage collection it put off runs once no key has come for this long.
GC_QUIET_S = 1.0


class ChatScreen(SlashCommands, Screen[None]):
    CSS_PATH = "chat.tcss"
    BINDINGS = [Binding("escape", "cancel_turn", "Cancel turn")]

    def __init__(self, label: str = "", history: PromptHistory | None = None) -> None:
        super().__init__()
        self.label = label
        self.history = history
        self.runtime: TuiRuntime | None = None
        # Prompts and commands taken so far (tests wait on it instead of sleeping).
        self.submissions = 0
        # What ``!command`` runs printed, for the model with the next message.
        self.pending_notes: list[str] = []
        # What was typed for the turn that has been asked for but has not begun: a Ctrl+C or Esc
        # in that moment cancels a turn the agent never saw, and the words go back to the prompt.
        self._unsent: tuple[str, list[str]] | None = None

    def compose(self) -> ComposeResult:
        with Horizontal(id="body"):
            with Vertical(id="main"):
                yield Static(id="title")
                yield Conversation(id="conversation")
                yield PromptInput(id="prompt", placeholder="Ask the agent, or type /help", history=self.history)
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
        agent.approve = self.approve  # the person at this screen answers the policy's questions
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

    async def submit_prompt(self, text: str) -> None:
        """Take ``text`` as if the person had typed it and pressed Enter."""
        await self._take(text)

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
        shell = commands.shell_command(text)
        if shell is not None:
            await self._take_shell(shell)
            return
        await self.send(commands.unescape(text))

    async def _take_shell(self, command: str) -> None:
        ctx = self.agent.tool_ctx
        if not command:
            await self.conversation.add_notice("!command runs a shell command, e.g. !git status", "warning")
        elif ctx is None:
            await self.conversation.add_notice("this session has no workspace to run commands in", "warning")
        else:
            await self.conversation.end_assistant()
            self.run_shell(command)

    async def send(self, typed: str) -> None:
        """Start a turn with `typed`, the files it mentions and the pending shell output."""
        ctx = self.agent.tool_ctx
        files: list[attachments.Attached] = []
        if ctx is not None and attachments.mentions(typed):
            expansion = await attachments.expand(typed, ctx.workspace)
            if expansion.refused:
                await self._refuse(typed, expansion.refused)
                return
            files = expansion.files
        message = attachments.compose(typed, self.pending_notes, files)
        self._unsent = (typed, self.pending_notes)
        self.pending_notes = []
        await self.conversation.add_user(typed)
        if files:
            shown = ", ".join(f"{f.shown} ({len(f.text):,} chars{', cut' if f.omitted_chars else ''})" for f in files)
            await self.conversation.add_notice(f"attached {shown}")
        self.run_turn(message)

    async def _refuse(self, typed: str, reasons: list[str]) -> None:
        for reason in reasons:
            await self.conversation.add_notice(reason, "warning")
        await self.conversation.add_notice("not sent: fix or remove that @mention (the prompt is kept)", "warning")
        if not self.prompt.text:
            self.prompt.text = typed
            self.prompt.move_cursor(self.prompt.document.end)

    @on(MentionStarted)
    def _mention_started(self, message: MentionStarted) -> None:
        message.stop()
        ctx = self.agent.tool_ctx if self.runtime is not None else None
        if ctx is not None:
            self.app.push_screen(FilePickerScreen(ctx.workspace), self._mention_picked)

    def _mention_picked(self, path: str | None) -> None:
        if path:
            self.prompt.complete_mention(path)
        self.prompt.focus()

    def action_cancel_turn(self) -> bool:
        """Cancel the running turn (or /compact); the session and its history stay."""
        workers = self._agent_workers()
        for worker in workers:
            worker.cancel()
        if workers and self._unsent is not None:
            typed, notes = self._unsent
            self._unsent = None
            self.pending_notes = notes + self.pending_notes
            self.run_worker(self._give_back(typed), exit_on_error=False)
        return bool(workers)

    async def _give_back(self, typed: str) -> None:
        await self.conversation.add_notice(
            "cancelled before it was sent; your message is back in the prompt", "warning"
        )
        if not self.prompt.text:
            self.prompt.text = typed
            self.prompt.move_cursor(self.prompt.document.end)

    # -- running the agent -----------------------------------------------------------------------

    @work(exclusive=True, group=AGENT_GROUP, exit_on_error=False, name="turn")
    async def run_turn(self, text: str) -> None:
        self._unsent = None  # begun: a cancel from now on reaches the agent, which keeps the turn
        try:
            with gc_pacing.full_collections_deferred():
                await self.consume(self.agent.run_turn(text))
        finally:
            self.set_timer(GC_QUIET_S, self._collect_when_quiet)

    def _collect_when_quiet(self) -> None:
        quiet_for = input_priority.since_last_key()
        if quiet_for < GC_QUIET_S:
            self.set_timer(GC_QUIET_S - quiet_for, self._collect_when_quiet)
        else:
            gc_pacing.catch_up()  # a turn running now catches up after it instead

    @work(exclusive=True, group=AGENT_GROUP, exit_on_error=False, name="shell")
    async def run_shell(self, command: str) -> None:
        """``!command``: in the agent's group, so it holds off prompts and Esc cancels it."""
        ctx = self.agent.tool_ctx
        assert ctx is not None
        self.pending_notes.append(await chat_commands.shell(self.conversation, ctx, command))

    @work(exclusive=True, group=AGENT_GROUP, exit_on_error=False, name="compact")
    async def compact(self) -> None:
        await self.conversation.add_notice("compacting the conversation…")
        await self.consume(self.agent.compact_now())

    async def consume(self, events: AsyncIterator[Event]) -> None:
        """Show every event (approvals are asked through ``approve``, which the agent calls)."""
        held_since = time.monotonic()
        try:
            while True:
                try:
                    event = await anext(events)
                except StopAsyncIteration:
                    break
                await self.show_event(event)
                if time.monotonic() - held_since > YIELD_EVERY_S:
                    await asyncio.sleep(0)
                    held_since = time.monotonic()
        except asyncio.CancelledError:
            await self._after_cancel(events)
            raise

    async def approve(self, request: ApprovalRequest) -> Approval:
        """The agent's ``approve``: asked from inside the turn's worker, so the modal can be awaited."""
        answer = await self.app.push_screen_wait(ApprovalScreen(request, rule_store(self.runtime)))
        block = self.conversation.tool_blocks.get(request.call_id)
        if block is not None:
            block.set_running()
        return Approval.of(answer, request)

    async def _after_cancel(self, events: AsyncIterator[Event]) -> None:
        while isinstance(self.app.screen, SaveRuleScreen | ApprovalScreen):
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
            await conversation.write_text(terminal_safe(event.text))
        elif isinstance(event, Metrics):
            self.metrics.record(event)
        elif isinstance(event, PromptProgress):
            self.metrics.reading(event.processed, event.total)
        elif isinstance(event, SpeculationChosen):
            self.metrics.speculation(event.reason)
        elif isinstance(event, ReasoningDelta):
            await conversation.write_reasoning(terminal_safe(event.text))
        elif isinstance(event, ToolCallStarted):
            await conversation.start_tool(event.call_id, event.name, one_line_safe(event.summary), event.arguments)
        elif isinstance(event, ApprovalRequested):
            (await conversation.tool_block(event.call_id, event.name)).set_waiting()
        elif isinstance(event, ToolCallFinished):
            block = await conversation.tool_block(event.call_id, event.name)
            diff = event.metadata.get("diff") if isinstance(event.metadata, dict) else None
            shown_diff = terminal_safe(diff) if isinstance(diff, str) else None
            await block.finish(terminal_safe(event.output), event.is_error, event.duration_s, shown_diff)
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
            await conversation.add_notice(terminal_safe(event.text))
        elif isinstance(event, ErrorEvent):
            await conversation.add_notice(terminal_safe(event.message), "error")
        elif isinstance(event, TurnFinished):
            await conversation.end_assistant()
            totals = self.agent.totals if self.runtime is not None else {}
            self.metrics.turn_finished(totals)
            await conversation.add_notice(reports.turn_summary(event), "summary")
            if event.reason not in ("done", "cancelled"):
                await conversation.add_notice(terminal_safe(f"stopped ({event.reason}): {event.message}"), "warning")

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        worker = event.worker
        if worker.node is not self or event.state != WorkerState.ERROR:
            return
        event.stop()
        if self.runtime is not None:
            # The live totals counted the failed request's tokens: back to what the agent counted.
            self.metrics.turn_finished(self.agent.totals)
        else:
            self.metrics.model.request_finished()
            self.metrics.refresh_now()
        self.run_worker(
            self.conversation.add_notice(f"{worker.name} failed: {worker.error}", "error"), exit_on_error=False
        )
