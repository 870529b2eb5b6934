"""The monitor app: a server's live numbers and its recent requests, read from ``/metrics`` and
``/slots`` (and, for a managed server, its record: state, restarts, pid), never from the client.

It runs beside any client of the server (Claude Code, Codex, opencode, an editor), so it has
nothing to start and nothing to stop: q quits the monitor and leaves the server alone."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Footer, Static

from server.registry import ServerRecord
from server.telemetry import ServerStats, TelemetryPoller
from server.traffic import RequestsFinished, TrafficTracker
from tui.monitor.request_log import RequestLog
from tui.monitor.traffic_panel import TrafficPanel

POLL_INTERVAL_S = 0.5
RECORD_INTERVAL_S = 1.0


@dataclass(frozen=True)
class MonitoredServer:
    base_url: str
    label: str  # "tiny on 127.0.0.1:8910 · CPU"
    api_key: str | None = None
    # A managed server's record, read again each second (None: not ours, reachability only).
    read_record: Callable[[], ServerRecord | None] | None = None


class MonitorApp(App[int]):
    TITLE = "localagent monitor"
    ENABLE_COMMAND_PALETTE = False
    BINDINGS = [Binding("q", "quit", "Quit"), Binding("ctrl+c", "quit", "Quit", show=False, priority=True)]
    CSS = """
    #monitor-title { height: 1; padding: 0 1; background: $panel; color: $text; }
    #monitor-body { height: 1fr; }
    #requests { width: 1fr; padding: 0 1; }
    #requests-title { height: 1; color: $text-accent; text-style: bold; }
    TrafficPanel { width: 44; border-left: none; border-right: solid $panel-lighten-2; }
    """

    def __init__(self, server: MonitoredServer, *, poll_interval: float = POLL_INTERVAL_S) -> None:
        super().__init__()
        self.server = server
        self.poll_interval = poll_interval
        self.tracker = TrafficTracker()
        self.poller = TelemetryPoller(server.base_url, server.api_key, interval=poll_interval)
        self._health_asked = False

    def compose(self) -> ComposeResult:
        yield Static(
            f"{self.server.label} · {self.server.base_url} · reads /metrics and /slots every {self.poll_interval:g} s",
            id="monitor-title",
        )
        with Horizontal(id="monitor-body"):
            yield TrafficPanel(label=self.server.label.split(" on ")[0], id="panel")
            with Vertical(id="requests"):
                yield Static("finished requests", id="requests-title")
                yield RequestLog(id="request-log")
        yield Footer()

    def on_mount(self) -> None:
        panel = self.query_one(TrafficPanel)
        if self.server.read_record is None:
            panel.set_unmanaged()
        else:
            self._read_record()
            self.set_interval(RECORD_INTERVAL_S, self._read_record)
        self.poller.subscribe(self._on_stats)
        self.poller.start()

    async def on_unmount(self) -> None:
        await self.poller.stop()

    def _on_stats(self, stats: ServerStats) -> None:
        self._explain(stats)
        panel = self.query_one(TrafficPanel)
        panel.apply_stats(stats)
        now = time.monotonic()
        for change in self.tracker.observe(stats, now):
            panel.apply_change(change, now)
            if isinstance(change, RequestsFinished):
                self.query_one(RequestLog).add_finished(change)

    def _explain(self, stats: ServerStats) -> None:
        """Why nothing shows, when the server itself is the reason: said once, in the title."""
        title = self.query_one("#requests-title", Static)
        if stats.reachable and stats.metrics is None:
            title.update("finished requests: this server gives no /metrics (start llama-server with --metrics)")
        elif not stats.reachable and not self._health_asked:
            self._health_asked = True
            self.run_worker(self._why_unreachable(title), exit_on_error=False)
        elif stats.reachable:
            title.update("finished requests")

    async def _why_unreachable(self, title: Static) -> None:
        import httpx2

        try:
            async with httpx2.AsyncClient(timeout=5.0) as client:
                health = await client.get(f"{self.server.base_url}/health")
        except httpx2.HTTPError:
            return
        if health.status_code == 200:
            # /health needs no key; /metrics and /props do, when the server has one.
            title.update("finished requests: the server answers /health only; it wants an API key (server.api_key)")

    def _read_record(self) -> None:
        assert self.server.read_record is not None
        record = self.server.read_record()
        self.query_one(TrafficPanel).apply_record(record)
