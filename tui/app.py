"""The localagent Textual app.

``LocalAgentApp(runtime_factory)``: the factory is an async callable that builds the runtime (the
real one calls ``build_agent``; tests and the benchmark pass their own), so the app runs without
a server as easily as with one. While the factory runs, a loading screen shows the server's state.

``history_file`` keeps the prompts for Up/Down across sessions (the CLI passes
``tui.prompt_history.history_file_for(<data dir>, <workspace>)``); None keeps them in memory only.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import cast

from textual import events, work
from textual.app import App
from textual.binding import Binding
from textual.message import Message
from textual.screen import Screen
from textual.worker import Worker, WorkerCancelled, WorkerFailed, WorkerState

from server.http import server_root
from server.supervisor import SupervisorStatus
from server.telemetry import ServerStats, TelemetryPoller
from tools.mcp.approvals import ApprovalRequest
from tui import gc_pacing, input_priority
from tui.messages import ServerStatusChanged, TelemetryUpdated
from tui.prompt_history import PromptHistory
from tui.runtime import RuntimeFactory, TuiRuntime
from tui.screens.chat import ChatScreen
from tui.screens.loading import LoadingScreen
from tui.screens.mcp_approval import McpApprovalScreen
from tui.widgets.metrics_panel import MetricsPanel
from tui.widgets.prompt_input import PromptInput
from tui.widgets.streamed_markdown import warm_up_in_background

# A second Ctrl+C within this many seconds quits.
QUIT_WINDOW_S = 2.0


class LocalAgentApp(App[int]):
    TITLE = "localagent"
    ENABLE_COMMAND_PALETTE = False
    BINDINGS = [
        # Priority: it must work while the prompt (which would copy on Ctrl+C) or a modal has focus.
        Binding("ctrl+c", "interrupt", "Cancel / quit", priority=True),
        Binding("ctrl+q", "quit", "Quit", show=False, priority=True),
    ]

    def __init__(
        self,
        runtime_factory: RuntimeFactory,
        *,
        label: str = "",
        telemetry: bool = True,
        poll_interval: float = 1.0,
        history_file: Path | None = None,
        first_prompt: str | None = None,
    ) -> None:
        super().__init__()
        self.runtime_factory = runtime_factory
        self.label = label
        self.telemetry = telemetry
        self.poll_interval = poll_interval
        # Sent as the first message once the model is ready (`localagent "fix the bug"`).
        self.first_prompt = first_prompt
        self.runtime: TuiRuntime | None = None
        self.chat = ChatScreen(label, PromptHistory(history_file))
        self.loading_screen = LoadingScreen(label or "the model server")
        self.poller: TelemetryPoller | None = None
        self._boot_worker: Worker[TuiRuntime] | None = None
        self._stopping_runtime = False
        # Why the runtime could not be built; the launcher re-raises it once the screen is gone.
        self.boot_error: BaseException | None = None
        self._last_interrupt = -QUIT_WINDOW_S

    def post_message(self, message: Message) -> bool:
        # The earliest the app knows of a key (the terminal's input is posted here): from now
        # until it is drawn, streamed output waits (tui.input_priority).
        if isinstance(message, events.Key):
            input_priority.key_arrived()
        return super().post_message(message)

    async def on_mount(self) -> None:
        # Both screens are composed before start-up begins: a fast runtime factory (an endpoint
        # that is already up) must not find the chat screen without its widgets.
        await self.push_screen(self.chat)
        await self.push_screen(self.loading_screen)
        self._boot_worker = self._boot()
        warm_up_in_background()

    # -- start-up --------------------------------------------------------------------------------

    @work(exclusive=True, group="boot", exit_on_error=False, name="start")
    async def _boot(self) -> TuiRuntime:
        return await self.runtime_factory(self._status_from_supervisor)

    async def approve_project_mcp(self, request: ApprovalRequest) -> bool:
        """Asked by build_agent (inside the start-up worker) before a repo's own MCP servers run."""
        screen = cast("Screen[object]", McpApprovalScreen(request))  # answers a bool; Textual types the wait loosely
        return bool(await self.push_screen_wait(screen))

    def _status_from_supervisor(self, status: SupervisorStatus) -> None:
        # Called from the supervisor's tasks in this loop: hand over as a message, never touch
        # widgets from inside someone else's callback.
        self.post_message(ServerStatusChanged(status))

    def on_server_status_changed(self, message: ServerStatusChanged) -> None:
        panel = self._metrics_panel()
        if panel is not None:
            panel.apply_status(message.status)
        if self.loading_screen in self.screen_stack:
            self.loading_screen.show_status(message.status)

    def on_telemetry_updated(self, message: TelemetryUpdated) -> None:
        panel = self._metrics_panel()
        if panel is not None:
            panel.apply_stats(message.stats)

    def _metrics_panel(self) -> MetricsPanel | None:
        # A poll or status message can arrive while the app shuts down, after the chat screen's
        # widgets are gone: it then has nowhere to go.
        panels = self.chat.query(MetricsPanel)
        return panels.first() if panels else None

    async def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker is not self._boot_worker:
            return
        if event.state == WorkerState.SUCCESS:
            await self._attach_runtime(cast("TuiRuntime", event.worker.result))  # the boot worker's result
        elif event.state == WorkerState.ERROR:
            error = event.worker.error
            self.boot_error = error
            self.loading_screen.show_error(str(error) or type(error).__name__)

    async def _attach_runtime(self, runtime: TuiRuntime) -> None:
        if self._stopping_runtime:
            await runtime.close()
            return
        # The conversation (a resumed one included) is in place before the loading screen goes.
        await self.chat.attach(runtime)
        self.runtime = runtime
        if self.screen is self.loading_screen:
            self.pop_screen()
            self.chat.prompt.focus()
        if self.first_prompt:
            prompt, self.first_prompt = self.first_prompt, None
            await self.chat.submit_prompt(prompt)
        # What start-up built lives as long as the app: later full collections need not walk it.
        gc_pacing.freeze_startup()
        # Telemetry only where there is an HTTP server to ask (not a synthetic runtime).
        if self.telemetry and runtime.base_url.startswith(("http://", "https://")):
            root = server_root(runtime.base_url)
            self.poller = TelemetryPoller.for_server(root, runtime.api_key, self.poll_interval)
            self.poller.subscribe(self._stats_from_poller)
            self.poller.start()

    def _stats_from_poller(self, stats: ServerStats) -> None:
        self.post_message(TelemetryUpdated(stats))

    # -- leaving ---------------------------------------------------------------------------------

    async def action_interrupt(self) -> None:
        """Ctrl+C: cancel the running turn; on an idle prompt, clear it, and twice in a row quit."""
        if self.runtime is None:  # still starting (or failed): nothing to cancel, so leave
            await self.action_quit()
            return
        if self.chat.action_cancel_turn():
            self._last_interrupt = -QUIT_WINDOW_S
            return
        now = time.monotonic()
        if now - self._last_interrupt < QUIT_WINDOW_S:
            await self.action_quit()
            return
        self._last_interrupt = now
        prompt = self.chat.query_one(PromptInput)
        if prompt.text:
            prompt.clear()
        self.notify("Press Ctrl+C again to quit", timeout=QUIT_WINDOW_S)

    async def action_quit(self) -> None:
        if not self._stopping_runtime and self.runtime is not None and self.runtime.server is not None:
            self.notify("stopping the model server…", timeout=10)
        await self.close_runtime()
        self.exit(return_code=1 if self.boot_error is not None else 0)

    async def close_runtime(self) -> None:
        """Cancel agent work, stop polling, stop the server this session started. Idempotent."""
        if self._stopping_runtime:
            return
        self._stopping_runtime = True
        for worker in list(self.workers):
            if worker is not self._boot_worker and not worker.is_finished:
                worker.cancel()
        boot = self._boot_worker
        if boot is not None and not boot.is_finished:
            boot.cancel()
            try:
                await boot.wait()
            except (WorkerCancelled, WorkerFailed):
                pass
        if self.poller is not None:
            await self.poller.stop()
            self.poller = None
        if self.runtime is not None:
            await self.runtime.close()

    async def on_unmount(self) -> None:
        # However the app ends, a server this session started does not outlive it.
        await self.close_runtime()
        gc_pacing.restore()
