"""The live numbers: generation speed, draft acceptance, prompt speed and cache reuse, context,
server state and session totals (counted live while a turn runs).

Agent events update a plain ``LiveMetrics`` model at any rate; the panel repaints from it on a
timer (4 Hz, and not while a key is on its way to the screen), so thousands of tokens per second
cost a few attribute writes each, not a repaint.
"""

from __future__ import annotations

import time

from rich.cells import cell_len
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Digits, ProgressBar, Sparkline, Static

from agent.events import Metrics
from server.supervisor import SupervisorStatus
from server.telemetry import ServerStats
from tui import formatting, input_priority
from tui.metrics_model import LiveMetrics
from tui.widgets.server_status import status_text

REFRESH_S = 0.25
MAX_POSITIONS = 6


class MetricsPanel(VerticalScroll, can_focus=False):
    SESSION_TITLE = "session"
    DEFAULT_CSS = """
    MetricsPanel {
        width: 40;
        height: 1fr;
        padding: 0 1;
        border-left: solid $panel-lighten-2;
        scrollbar-size-vertical: 1;
    }
    MetricsPanel .section { color: $text-accent; text-style: bold; margin: 1 0 0 0; }
    MetricsPanel #m-tps { width: auto; color: $success; }
    MetricsPanel #m-spark { height: 3; margin: 0 0 0 0; }
    MetricsPanel #m-spark > .sparkline--max-color { color: $success; }
    MetricsPanel #m-spark > .sparkline--min-color { color: $success-darken-3; }
    MetricsPanel ProgressBar { width: 100%; }
    MetricsPanel ProgressBar Bar { width: 1fr; }
    MetricsPanel #m-reading { display: none; }
    MetricsPanel.-reading #m-reading { display: block; }
    MetricsPanel Static { height: auto; }
    """

    def __init__(self, *, label: str = "", id: str | None = None) -> None:
        super().__init__(id=id)
        self.model = LiveMetrics()
        self.label = label
        self._dirty = True
        # What each Static shows, so an unchanged figure costs nothing and a changed one only
        # asks for a layout when its height changes (a layout pass covers the whole screen).
        self._shown: dict[str, tuple[str, int]] = {}

    def compose(self) -> ComposeResult:
        yield Static(id="m-server")
        yield Static("generation", classes="section")
        yield Digits(formatting.DASH, id="m-tps")
        yield Static(id="m-tps-line")
        yield Sparkline([], id="m-spark")
        yield Static("speculative decoding", classes="section")
        yield Static(id="m-accept")
        yield Static("prompt", classes="section")
        yield Static(id="m-prompt")
        yield ProgressBar(total=None, show_eta=False, show_percentage=False, id="m-reading")
        yield Static("context", classes="section")
        yield ProgressBar(total=1, show_eta=False, id="m-context")
        yield Static(id="m-context-line")
        yield Static(self.SESSION_TITLE, classes="section")
        yield Static(id="m-session")

    def on_mount(self) -> None:
        self.refresh_now()
        self.set_interval(REFRESH_S, self._tick)

    # -- inputs (cheap: they only touch the model) ---------------------------------------------

    def record(self, metrics: Metrics, now: float | None = None) -> None:
        self.model.record(metrics, time.monotonic() if now is None else now)
        self._dirty = True

    def speculation(self, reason: str) -> None:
        self.model.speculation_choice = reason
        self._dirty = True

    def reading(self, processed: int, total: int, now: float | None = None) -> None:
        self.model.reading(processed, total, time.monotonic() if now is None else now)
        self._dirty = True

    def turn_started(self, now: float | None = None) -> None:
        self.model.turn_started(time.monotonic() if now is None else now)
        self._dirty = True

    def request_started(self, now: float | None = None) -> None:
        self.model.request_started(time.monotonic() if now is None else now)
        self._dirty = True

    def request_finished(self) -> None:
        self.model.request_finished()
        self._dirty = True

    def turn_finished(self, totals: dict[str, int]) -> None:
        self.model.turn_finished(totals)
        self.refresh_now()

    def apply_status(self, status: SupervisorStatus) -> None:
        self.model.apply_status(status)
        self._dirty = True

    def apply_stats(self, stats: ServerStats) -> None:
        self.model.apply_stats(stats)
        self._dirty = True

    def set_unmanaged(self) -> None:
        self.model.managed = False
        self.model.server_state = "ready"
        self._dirty = True

    # -- painting ------------------------------------------------------------------------------

    def _tick(self) -> None:
        if input_priority.hold_remaining() > 0:
            return  # a key is on its way to the screen: the figures can wait for the next tick
        # While the prompt is read the elapsed time changes even without new events.
        if self._dirty or self.model.waiting_since is not None:
            self.refresh_now()

    def refresh_now(self) -> None:
        self._dirty = False
        m = self.model
        self._put(
            "m-server",
            status_text(m.server_state, restarts=m.restarts, pid=m.server_pid, label=self.label, managed=m.managed),
        )
        digits = self.query_one("#m-tps", Digits)
        figure = formatting.rate(m.generation_tps)
        if digits.value != figure:
            digits.update(figure)
        tokens = m.request.predicted_n if m.request else 0
        self._put(
            "m-tps-line",
            Text.assemble(
                ("gen ", "dim"),
                (f"{formatting.rate(m.generation_tps)} tok/s", "bold"),
                (f" · {formatting.count(tokens)} tokens", "dim"),
            ),
        )
        spark = self.query_one("#m-spark", Sparkline)
        samples = list(m.samples)
        if samples != list(spark.data or []):
            spark.data = samples
        self._put("m-accept", self._acceptance_text())
        self._put("m-prompt", self._prompt_text())
        self.set_class(m.waiting_since is not None, "-reading")
        reading_bar = self.query_one("#m-reading", ProgressBar)
        if m.prompt_progress is not None:
            processed, total = m.prompt_progress
            reading_bar.update(total=total, progress=processed)
        elif reading_bar.total is not None:
            reading_bar.update(total=None)
        context = self.query_one("#m-context", ProgressBar)
        if m.n_ctx:
            context.update(total=m.n_ctx, progress=min(m.context_used, m.n_ctx))
        self._put(
            "m-context-line",
            Text(f"{formatting.count(m.context_used)} / {formatting.count(m.n_ctx)} tokens", style="dim"),
        )
        self._put("m-session", self._session_text())

    def _put(self, widget_id: str, text: Text) -> None:
        markup = text.markup
        width = self.scrollable_content_region.width
        lines = sum(max(1, -(-cell_len(line) // width)) for line in text.plain.split("\n")) if width else -1
        previous = self._shown.get(widget_id)
        if previous is not None and previous[0] == markup:
            return
        self._shown[widget_id] = (markup, lines)
        self.query_one(f"#{widget_id}", Static).update(
            text, layout=previous is None or lines < 0 or previous[1] != lines
        )

    def _acceptance_text(self) -> Text:
        m = self.model
        text = Text()
        note = m.acceptance_note
        if note is not None:
            text.append(note, style="italic dim")
        else:
            text.append("accept ", style="dim")
            text.append(formatting.percent(m.acceptance), style="bold green")
            text.append(f"\ndrafted {formatting.count(m.drafted)} · accepted {formatting.count(m.accepted)}")
        if m.mean_accepted_length is not None:
            text.append("\nmean accepted length ", style="dim")
            text.append(f"{m.mean_accepted_length:.2f}", style="bold")
        if m.speculation_choice:
            text.append("\n")
            text.append(m.speculation_choice, style="dim")
        if m.server_acceptance is not None:
            text.append("\nserver total ", style="dim")
            text.append(formatting.percent(m.server_acceptance))
        positions = m.acceptance_by_position[:MAX_POSITIONS]
        if positions:
            text.append("\nby draft position", style="dim")
            for index, share in enumerate(positions, start=1):
                text.append(f"\n {index} ")
                text.append(formatting.bar(share, 20), style="green")
                text.append(f" {share * 100:3.0f} %")
        return text

    def _prompt_text(self) -> Text:
        m = self.model
        text = Text()
        if m.waiting_since is not None:
            elapsed = time.monotonic() - m.waiting_since
            if m.prompt_progress is not None:
                processed, total = m.prompt_progress
                text.append(
                    f"reading the prompt: {formatting.count(processed)} / {formatting.count(total)} "
                    f"({processed / total:.0%}) {elapsed:.1f} s\n",
                    style="yellow",
                )
            elif m.prompt_read_so_far:
                text.append(
                    f"reading the prompt: {formatting.count(m.prompt_read_so_far)} so far, {elapsed:.1f} s\n",
                    style="yellow",
                )
            else:
                text.append(f"reading the prompt… {elapsed:.1f} s\n", style="yellow")
        text.append(f"{formatting.rate(m.prompt_tps)} tok/s", style="bold")
        read = m.request.prompt_n if m.request else 0
        text.append(f" · {formatting.count(read)} read", style="dim")
        text.append("\ncache reuse ", style="dim")
        text.append(formatting.percent(m.cache_reuse), style="bold")
        return text

    def _session_text(self) -> Text:
        m = self.model
        return Text.assemble(
            (f"{m.turns} turn{_s(m.turns)} · {m.tool_calls} tool call{_s(m.tool_calls)}\n", ""),
            (
                f"{formatting.count(m.session_prompt_tokens)} prompt · {formatting.count(m.session_completion_tokens)} completion",
                "dim",
            ),
        )


def _s(count: int) -> str:
    return "" if count == 1 else "s"
