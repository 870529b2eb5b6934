"""What a server is doing, seen from its ``/slots`` and ``/metrics`` alone: for a client that is
not ours (Claude Code, Codex, an editor), whose requests and responses we never see.

``TrafficTracker.observe`` takes one poll at a time and says what changed: a request began, one
is being read or generated (with live tok/s from the slot's token count), or requests ended
(their figures from the ``/metrics`` counters since the server was last idle, so a request that
started and ended between two polls is still counted)."""

from __future__ import annotations

from dataclasses import dataclass, field

from server.telemetry import MetricsSnapshot, ServerStats, SlotView


@dataclass(frozen=True)
class RequestStarted:
    slot: int


@dataclass(frozen=True)
class RequestProgress:
    """A running request: reading its prompt (``decoded`` 0) or generating."""

    slot: int
    prompt_tokens: int  # in the slot so far: the whole prompt once read (cached part included)
    cached_tokens: int
    processed_tokens: int  # read so far, batch by batch
    decoded: int
    tokens_per_second: float | None  # generation, between the last two polls
    context_used: int
    n_ctx: int | None


@dataclass(frozen=True)
class RequestsFinished:
    """Requests that ended since the server was last idle, as the counters add them up."""

    requests: int  # seen starting since then (at least 1: a short one may start and end unseen)
    prompt_tokens: int  # read (prefilled), not counting the cache
    cached_tokens: int | None
    generated_tokens: int
    prompt_seconds: float
    generation_seconds: float
    drafted: int | None
    accepted: int | None
    context_used: int

    @property
    def prompt_per_second(self) -> float | None:
        return self.prompt_tokens / self.prompt_seconds if self.prompt_seconds > 0 else None

    @property
    def generation_per_second(self) -> float | None:
        return self.generated_tokens / self.generation_seconds if self.generation_seconds > 0 else None

    @property
    def acceptance(self) -> float | None:
        return self.accepted / self.drafted if self.drafted and self.accepted is not None else None


Change = RequestStarted | RequestProgress | RequestsFinished


@dataclass
class _Running:
    task: int | None
    decoded: int = 0
    at: float = 0.0
    context_used: int = 0


@dataclass
class TrafficTracker:
    running: dict[int, _Running] = field(default_factory=dict)
    idle_counters: MetricsSnapshot | None = None  # /metrics when the server was last idle
    last_context: int = 0
    started_since_idle: int = 0

    def observe(self, stats: ServerStats, now: float) -> list[Change]:
        if not stats.reachable:
            return []
        changes: list[Change] = []
        for slot in stats.info.slots:
            changes += self._slot(slot, now)
        metrics = stats.metrics
        if metrics is None:
            return changes
        # Idle by both sources: /slots and /metrics are read apart, and vLLM and SGLang have no
        # /slots at all (their counters grow while a request runs).
        busy = any(slot.is_processing for slot in stats.info.slots) or (metrics.requests_processing or 0) > 0
        if busy:
            return changes
        if self.idle_counters is None:
            # The first idle look: what the counters held before is history, not traffic seen
            # here (a request already running when the monitor started is not counted).
            self.idle_counters = metrics
        elif _restarted(metrics, self.idle_counters):
            # The server restarted and its counters began again at zero: all they hold is new.
            changes.append(self._finished(metrics))
            self.idle_counters = metrics
        elif _moved(metrics, self.idle_counters):
            changes.append(self._finished(metrics.since(self.idle_counters)))
            self.idle_counters = metrics
        return changes

    def _slot(self, slot: SlotView, now: float) -> list[Change]:
        tracked = self.running.get(slot.id)
        if not slot.is_processing:
            self.running.pop(slot.id, None)
            return []
        changes: list[Change] = []
        if tracked is None or tracked.task != slot.id_task:
            tracked = self.running[slot.id] = _Running(slot.id_task, at=now)
            self.started_since_idle += 1
            changes.append(RequestStarted(slot.id))
        rate = None
        if slot.n_decoded > tracked.decoded and now > tracked.at and tracked.decoded > 0:
            rate = (slot.n_decoded - tracked.decoded) / (now - tracked.at)
        if slot.n_decoded != tracked.decoded:
            tracked.decoded, tracked.at = slot.n_decoded, now
        prompt = max(slot.n_prompt_tokens - slot.n_decoded, 0)
        self.last_context = slot.n_prompt_tokens
        changes.append(
            RequestProgress(
                slot=slot.id,
                prompt_tokens=prompt,
                cached_tokens=slot.n_prompt_tokens_cache,
                processed_tokens=slot.n_prompt_tokens_processed,
                decoded=slot.n_decoded,
                tokens_per_second=rate,
                context_used=slot.n_prompt_tokens,
                n_ctx=slot.n_ctx,
            )
        )
        return changes

    def _finished(self, delta: MetricsSnapshot) -> RequestsFinished:
        requests, self.started_since_idle = max(self.started_since_idle, 1), 0
        return RequestsFinished(
            requests=requests,
            prompt_tokens=int(delta.prompt_tokens_total),
            cached_tokens=None if delta.prompt_tokens_cached_total is None else int(delta.prompt_tokens_cached_total),
            generated_tokens=int(delta.tokens_predicted_total),
            prompt_seconds=delta.prompt_seconds_total,
            generation_seconds=delta.tokens_predicted_seconds_total,
            drafted=None if delta.draft_tokens_total is None else int(delta.draft_tokens_total),
            accepted=None if delta.accepted_tokens_total is None else int(delta.accepted_tokens_total),
            context_used=self.last_context,
        )


def _restarted(now: MetricsSnapshot, then: MetricsSnapshot) -> bool:
    return (
        now.tokens_predicted_total < then.tokens_predicted_total or now.prompt_tokens_total < then.prompt_tokens_total
    )


def _moved(now: MetricsSnapshot, then: MetricsSnapshot) -> bool:
    return (
        now.tokens_predicted_total != then.tokens_predicted_total or now.prompt_tokens_total != then.prompt_tokens_total
    )
