"""What the metrics panel shows, as plain data updated from agent events, server status and telemetry.

Kept free of Textual: events arrive far faster than the screen repaints, so the panel only reads
this model on its own refresh tick.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field

from agent.events import Metrics
from agent.request_totals import RequestTotals
from server.engines import LLAMA_CPP, display_name, engine_named
from server.supervisor import ServerState, SupervisorStatus
from server.telemetry import ServerStats

SPARK_POINTS = 120
# One sparkline point per this many seconds: enough to show the shape of a turn, and cheap at
# thousands of tokens per second.
SAMPLE_EVERY_S = 0.1


@dataclass
class LiveMetrics:
    n_ctx: int | None = None
    # The request in flight, or the last one when none is.
    request: Metrics | None = None
    request_open: bool = False
    # This turn's finished requests, each folded in once (a turn is several when tools run).
    turn_totals: RequestTotals = field(default_factory=RequestTotals)
    turn_saw_drafts: bool = False
    samples: deque[float] = field(default_factory=lambda: deque(maxlen=SPARK_POINTS))
    last_sample_at: float = -math.inf
    # Since when a request has been sent without a token back: the server is reading the prompt.
    waiting_since: float | None = None
    # (processed, total) prompt tokens while the server reads the prompt, when it says so.
    prompt_progress: tuple[int, int] | None = None
    # Prompt tokens read so far where the whole prompt's length is not known (a client that is not
    # ours, seen through /slots).
    prompt_read_so_far: int | None = None
    # From /props, /slots and /metrics.
    speculative: bool | None = None
    mean_accepted_length: float | None = None
    acceptance_by_position: tuple[float, ...] = ()
    server_acceptance: float | None = None
    engine: str = LLAMA_CPP.key  # whose /metrics these are: vLLM and SGLang count drafts only in total
    # What the agent asked of the server for the latest request, and why, in one line.
    speculation_choice: str | None = None
    # From the supervisor (managed server) or the poller (attached server).
    server_state: str = "starting"
    restarts: int = 0
    server_pid: int | None = None
    managed: bool = True
    # Session totals, as the agent counted them at the end of the last turn.
    turns: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    tool_calls: int = 0
    # While a turn runs: its finished requests' tokens, from their last Metrics (the request in
    # flight is ``request``). Shown on top of the totals above until the turn ends and the
    # agent's own count replaces all three.
    turn_open: bool = False
    turn_prompt_tokens: int = 0
    turn_completion_tokens: int = 0

    # -- updates -------------------------------------------------------------------------------

    def turn_started(self, now: float) -> None:
        self.turns += 1
        self.turn_open = True
        self.turn_prompt_tokens = self.turn_completion_tokens = 0
        self.turn_totals = RequestTotals()
        self.turn_saw_drafts = False
        self.samples.clear()
        self.last_sample_at = -math.inf
        self.request_started(now)

    def request_started(self, now: float) -> None:
        self.waiting_since = now
        self.prompt_progress = None
        self.prompt_read_so_far = None

    def reading(self, processed: int, total: int, now: float) -> None:
        if self.waiting_since is None:
            self.waiting_since = now
        self.prompt_progress = (processed, total)

    def record(self, metrics: Metrics, now: float) -> None:
        self.request = metrics
        self.request_open = True
        self.waiting_since = None
        self.prompt_progress = None
        if metrics.n_ctx:
            self.n_ctx = metrics.n_ctx
        if metrics.draft_n is not None:
            self.turn_saw_drafts = True
        if metrics.predicted_per_second and now - self.last_sample_at >= SAMPLE_EVERY_S:
            self.samples.append(metrics.predicted_per_second)
            self.last_sample_at = now

    def request_finished(self) -> None:
        """Fold the finished request's drafts into the turn's, so they are counted once."""
        if self.request is not None and self.request_open:
            self.turn_totals.add(self.request)
            if self.turn_open:
                self.turn_prompt_tokens += _prompt_tokens(self.request)
                self.turn_completion_tokens += self.request.predicted_n
        self.request_open = False
        self.waiting_since = None

    def turn_finished(self, totals: dict[str, int]) -> None:
        """The agent's totals replace the live count (which only estimated the turn's share)."""
        self.request_finished()
        self.turn_open = False
        self.turn_prompt_tokens = self.turn_completion_tokens = 0
        self.set_totals(totals)

    def set_totals(self, totals: dict[str, int]) -> None:
        self.prompt_tokens = int(totals.get("prompt_tokens", 0))
        self.completion_tokens = int(totals.get("completion_tokens", 0))
        self.tool_calls = int(totals.get("tool_calls", 0))

    def reset_conversation(self) -> None:
        self.request = None
        self.request_open = False
        self.turn_totals = RequestTotals()
        self.turn_saw_drafts = False
        self.samples.clear()
        self.waiting_since = None

    def apply_status(self, status: SupervisorStatus) -> None:
        self.managed = True
        self.server_state = str(status.state)
        self.restarts = status.restarts
        self.server_pid = status.pid

    def apply_stats(self, stats: ServerStats) -> None:
        if stats.reachable:
            self.speculative = stats.speculative
        if stats.n_ctx:
            self.n_ctx = stats.n_ctx
        metrics = stats.metrics
        if metrics is not None:
            self.mean_accepted_length = metrics.mean_accepted_length
            self.acceptance_by_position = metrics.acceptance_by_position
            self.server_acceptance = metrics.acceptance
            self.engine = metrics.engine
        if not self.managed:
            # No supervisor tells us about an attached server: reachability is all we know.
            self.server_state = str(ServerState.READY) if stats.reachable else str(ServerState.DOWN)

    # -- derived figures -------------------------------------------------------------------------

    @property
    def session_prompt_tokens(self) -> int:
        """Prompt tokens of the session so far, the running turn's included."""
        if not self.turn_open:
            return self.prompt_tokens
        in_flight = _prompt_tokens(self.request) if self.request is not None and self.request_open else 0
        return self.prompt_tokens + self.turn_prompt_tokens + in_flight

    @property
    def session_completion_tokens(self) -> int:
        """Completion tokens of the session so far, the running turn's included."""
        if not self.turn_open:
            return self.completion_tokens
        in_flight = self.request.predicted_n if self.request is not None and self.request_open else 0
        return self.completion_tokens + self.turn_completion_tokens + in_flight

    @property
    def generation_tps(self) -> float | None:
        return self.request.predicted_per_second if self.request else None

    @property
    def drafted(self) -> int:
        open_ = (self.request.draft_n or 0) if self.request and self.request_open else 0
        return (self.turn_totals.drafted or 0) + open_

    @property
    def accepted(self) -> int:
        open_ = (self.request.draft_n_accepted or 0) if self.request and self.request_open else 0
        return (self.turn_totals.accepted or 0) + open_

    @property
    def has_drafts(self) -> bool:
        return self.turn_saw_drafts or bool(self.request and self.request.draft_n is not None)

    @property
    def acceptance(self) -> float | None:
        """This turn's share of drafted tokens the target accepted; None when nothing was drafted."""
        return self.accepted / self.drafted if self.drafted else None

    @property
    def acceptance_note(self) -> str | None:
        """Why there is no acceptance figure, said in words instead of a misleading 0 %."""
        if self.has_drafts and self.drafted:
            return None
        if self.speculative is False:
            return "off on this server"
        engine = engine_named(self.engine)
        if not self.has_drafts and not engine.drafts_per_request and self.server_acceptance is not None:
            return f"{display_name(self.engine)} counts drafts only in total:"
        if self.has_drafts:
            return "nothing drafted yet"
        return "nothing drafted yet" if self.speculative else "no drafts (speculation off?)"

    @property
    def prompt_tps(self) -> float | None:
        return self.request.prompt_per_second if self.request and self.request.prompt_n else None

    @property
    def cache_reuse(self) -> float | None:
        if self.request is None:
            return None
        total = self.request.cache_n + self.request.prompt_n
        return self.request.cache_n / total if total else None

    @property
    def context_used(self) -> int:
        return self.request.context_used if self.request else 0


def _prompt_tokens(metrics: Metrics) -> int:
    # What the agent counts for a request: the prompt it read plus what the cache held (the
    # whole prompt, as usage reports it).
    return metrics.prompt_n + metrics.cache_n
