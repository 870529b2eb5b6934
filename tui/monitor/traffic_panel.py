"""The chat screen's metrics panel, fed from the server's own counters instead of an agent's
events; its last section counts requests, since there are no turns or tool calls to see."""

from __future__ import annotations

import time

from rich.text import Text

from agent.events import Metrics
from server.registry import ServerRecord
from server.traffic import Change, RequestProgress, RequestsFinished, RequestStarted
from tui import formatting
from tui.widgets.metrics_panel import MetricsPanel


class TrafficPanel(MetricsPanel):
    SESSION_TITLE = "since the monitor started"

    def __init__(self, *, label: str = "", id: str | None = None) -> None:
        super().__init__(label=label, id=id)
        self.finished = 0
        self.prompt_read = 0
        self.prompt_cached = 0
        self.generated = 0
        self._rate: float | None = None

    def apply_change(self, change: Change, now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        if isinstance(change, RequestStarted):
            self._rate = None
            self.request_started(now)
        elif isinstance(change, RequestProgress):
            self._progress(change, now)
        elif isinstance(change, RequestsFinished):
            self._finished(change, now)

    def apply_record(self, record: ServerRecord | None) -> None:
        """A managed server's state, pid and restarts, from its record (None: it is gone)."""
        if record is None:
            self.model.server_state, self.model.server_pid = "stopped", None
        else:
            self.model.server_state = record.state
            self.model.restarts = record.restarts
            self.model.server_pid = record.server_pid
        self._dirty = True

    def _progress(self, change: RequestProgress, now: float) -> None:
        if change.decoded == 0:
            # /slots says how much of the prompt is read, not how long it is: the slot's token
            # count grows batch by batch while it reads.
            self.model.prompt_read_so_far = change.processed_tokens or None
            self._dirty = True
            return
        self._rate = change.tokens_per_second or self._rate
        read = max(change.prompt_tokens - change.cached_tokens, 0)
        self.record(
            Metrics(
                predicted_n=change.decoded,
                predicted_per_second=self._rate,
                prompt_n=read,
                cache_n=change.cached_tokens,
                prompt_per_second=None,
                draft_n=None,
                draft_n_accepted=None,
                context_used=change.context_used,
                n_ctx=change.n_ctx,
            ),
            now,
        )

    def _finished(self, change: RequestsFinished, now: float) -> None:
        self.record(
            Metrics(
                predicted_n=change.generated_tokens,
                predicted_per_second=change.generation_per_second,
                prompt_n=change.prompt_tokens,
                cache_n=change.cached_tokens or 0,
                prompt_per_second=change.prompt_per_second,
                draft_n=change.drafted or None,
                draft_n_accepted=change.accepted if change.drafted else None,
                context_used=change.context_used,
                n_ctx=self.model.n_ctx,
            ),
            now,
        )
        self.request_finished()
        self.finished += change.requests
        self.prompt_read += change.prompt_tokens
        self.prompt_cached += change.cached_tokens or 0
        self.generated += change.generated_tokens
        self._dirty = True

    def _session_text(self) -> Text:
        return Text.assemble(
            (f"{self.finished} request{'' if self.finished == 1 else 's'} seen\n", ""),
            (
                f"{formatting.count(self.prompt_read)} read · {formatting.count(self.prompt_cached)} cached · "
                f"{formatting.count(self.generated)} generated",
                "dim",
            ),
        )
