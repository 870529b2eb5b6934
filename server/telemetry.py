"""A server's signals as one typed ``ServerStats``.

Sources: the ``timings`` object of each response (per token with ``timings_per_token``),
``/metrics`` (Prometheus text, parsed with prometheus-client's parser), ``/props`` and ``/slots``.
Missing draft fields mean "nothing was drafted", never "0 % accepted": every acceptance figure is
``None`` when no draft was made.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import httpx2

from server.engines import LLAMA_CPP
from server.engines.metrics import collect
from server.http import auth_headers


def _ratio(numerator: float | None, denominator: float | None) -> float | None:
    if numerator is None or not denominator:
        return None
    return numerator / denominator


@dataclass(frozen=True)
class RequestTimings:
    """One response's ``timings``: cumulative for the request so far."""

    cache_n: int = 0
    prompt_n: int = 0
    prompt_ms: float = 0.0
    prompt_per_second: float | None = None
    predicted_n: int = 0
    predicted_ms: float = 0.0
    predicted_per_second: float | None = None
    draft_n: int | None = None
    draft_n_accepted: int | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> RequestTimings | None:
        if not data:
            return None

        def number(key: str, kind: type = float) -> Any:
            value = data.get(key)
            return None if value is None else kind(value)

        return cls(
            cache_n=number("cache_n", int) or 0,
            prompt_n=number("prompt_n", int) or 0,
            prompt_ms=number("prompt_ms") or 0.0,
            prompt_per_second=number("prompt_per_second"),
            predicted_n=number("predicted_n", int) or 0,
            predicted_ms=number("predicted_ms") or 0.0,
            predicted_per_second=number("predicted_per_second"),
            draft_n=number("draft_n", int),
            draft_n_accepted=number("draft_n_accepted", int),
        )

    @property
    def drafted(self) -> bool:
        return bool(self.draft_n)

    @property
    def acceptance(self) -> float | None:
        return _ratio(self.draft_n_accepted, self.draft_n)


@dataclass(frozen=True)
class MetricsSnapshot:
    """``/metrics`` at one moment. Counters are totals since the server started."""

    prompt_tokens_total: float = 0.0
    prompt_tokens_cached_total: float | None = None
    prompt_seconds_total: float = 0.0
    tokens_predicted_total: float = 0.0
    tokens_predicted_seconds_total: float = 0.0
    draft_tokens_total: float | None = None
    accepted_tokens_total: float | None = None
    drafts_total: float | None = None
    accepted_per_position: tuple[float, ...] = ()
    predicted_tokens_seconds: float | None = None  # gauge: average since the previous scrape
    prompt_tokens_seconds: float | None = None
    requests_processing: float | None = None
    engine: str = LLAMA_CPP.key
    # Prompt tokens looked up in the prefix cache, and found (vLLM, SGLang).
    prefix_cache_queries_total: float | None = None
    prefix_cache_hits_total: float | None = None
    # An engine's own averages where it publishes no draft counters (SGLang's gauges).
    reported_acceptance: float | None = None
    reported_accepted_length: float | None = None

    @property
    def drafted(self) -> bool:
        return bool(self.draft_tokens_total) or bool(self.reported_accepted_length)

    @property
    def acceptance(self) -> float | None:
        if self.draft_tokens_total:
            return _ratio(self.accepted_tokens_total, self.draft_tokens_total)
        return self.reported_acceptance if self.reported_accepted_length else None

    @property
    def mean_accepted_length(self) -> float | None:
        """Tokens gained per verification step: the target's own token plus the accepted drafts."""
        per_step = _ratio(self.accepted_tokens_total, self.drafts_total)
        if per_step is None:
            return self.reported_accepted_length or None
        return 1.0 + per_step

    @property
    def prefix_cache_hit_rate(self) -> float | None:
        return _ratio(self.prefix_cache_hits_total, self.prefix_cache_queries_total)

    @property
    def acceptance_by_position(self) -> tuple[float, ...]:
        """For each draft position, the share of verification steps that accepted it."""
        if not self.drafts_total:
            return ()
        return tuple(count / self.drafts_total for count in self.accepted_per_position)

    def since(self, earlier: MetricsSnapshot) -> MetricsSnapshot:
        """Counter differences: what happened between two scrapes (e.g. one benchmark run)."""

        def diff(now: float | None, then: float | None) -> float | None:
            if now is None:
                return None
            return now - (then or 0.0)

        positions = tuple(
            count - (earlier.accepted_per_position[i] if i < len(earlier.accepted_per_position) else 0.0)
            for i, count in enumerate(self.accepted_per_position)
        )
        return replace(
            self,
            prompt_tokens_total=self.prompt_tokens_total - earlier.prompt_tokens_total,
            prompt_tokens_cached_total=diff(self.prompt_tokens_cached_total, earlier.prompt_tokens_cached_total),
            prompt_seconds_total=self.prompt_seconds_total - earlier.prompt_seconds_total,
            tokens_predicted_total=self.tokens_predicted_total - earlier.tokens_predicted_total,
            tokens_predicted_seconds_total=self.tokens_predicted_seconds_total - earlier.tokens_predicted_seconds_total,
            draft_tokens_total=diff(self.draft_tokens_total, earlier.draft_tokens_total),
            accepted_tokens_total=diff(self.accepted_tokens_total, earlier.accepted_tokens_total),
            drafts_total=diff(self.drafts_total, earlier.drafts_total),
            accepted_per_position=positions,
            prefix_cache_queries_total=diff(self.prefix_cache_queries_total, earlier.prefix_cache_queries_total),
            prefix_cache_hits_total=diff(self.prefix_cache_hits_total, earlier.prefix_cache_hits_total),
        )


def parse_metrics(text: str) -> MetricsSnapshot:
    """A ``/metrics`` page of llama-server, vLLM or SGLang (see ``server.engines.metrics``)."""
    samples = collect(text)
    return MetricsSnapshot(**samples.values, accepted_per_position=samples.accepted_per_position, engine=samples.engine)


@dataclass(frozen=True)
class SlotView:
    """One ``/slots`` entry. While a request runs, ``n_prompt_tokens`` grows with each generated
    token (it is the slot's whole context); once it ends, the per-request counts read 0."""

    id: int
    n_ctx: int | None
    is_processing: bool
    id_task: int | None
    n_prompt_tokens: int
    n_prompt_tokens_processed: int
    n_prompt_tokens_cache: int
    n_decoded: int

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SlotView:
        next_token = data.get("next_token") or [{}]
        first = next_token[0] if isinstance(next_token, list) and next_token else {}

        def whole(value: Any) -> int:
            # json.loads takes NaN and 1e400 too: a number that is no count reads as 0.
            return int(value) if isinstance(value, (int, float)) and math.isfinite(value) else 0

        return cls(
            id=whole(data.get("id")),
            n_ctx=data.get("n_ctx") if isinstance(data.get("n_ctx"), int) else None,
            is_processing=bool(data.get("is_processing")),
            id_task=data.get("id_task") if isinstance(data.get("id_task"), int) else None,
            n_prompt_tokens=whole(data.get("n_prompt_tokens")),
            n_prompt_tokens_processed=whole(data.get("n_prompt_tokens_processed")),
            n_prompt_tokens_cache=whole(data.get("n_prompt_tokens_cache")),
            n_decoded=whole(first.get("n_decoded") if isinstance(first, Mapping) else None),
        )


@dataclass(frozen=True)
class ServerInfo:
    """What ``/props`` and ``/slots`` say about the server."""

    n_ctx: int | None = None
    model_path: str | None = None
    build_info: str | None = None
    total_slots: int | None = None
    speculative: bool | None = None
    slots_processing: int = 0
    slots: tuple[SlotView, ...] = ()

    @classmethod
    def from_json(cls, props: Mapping[str, Any] | None, slots: list[Mapping[str, Any]] | None) -> ServerInfo:
        props = props or {}
        settings = props.get("default_generation_settings") or {}
        speculative = None
        processing = 0
        # Whatever answers at the address may send a list of anything: only objects are slots.
        slots = [slot for slot in slots or () if isinstance(slot, Mapping)]
        if slots:
            speculative = any(bool(slot.get("speculative")) for slot in slots)
            processing = sum(1 for slot in slots if slot.get("is_processing"))
        return cls(
            n_ctx=settings.get("n_ctx"),
            model_path=props.get("model_path"),
            build_info=props.get("build_info"),
            total_slots=props.get("total_slots"),
            speculative=speculative,
            slots_processing=processing,
            slots=tuple(SlotView.from_json(slot) for slot in slots),
        )


@dataclass(frozen=True)
class ServerStats:
    """Everything the TUI shows about a server, at one moment."""

    at: float = field(default_factory=time.time)
    reachable: bool = True
    info: ServerInfo = ServerInfo()
    metrics: MetricsSnapshot | None = None

    @property
    def speculative(self) -> bool:
        """Whether this server drafts at all (so 'no acceptance yet' is not shown as 0 %)."""
        if self.info.speculative is not None:
            return self.info.speculative
        return bool(self.metrics and self.metrics.drafted)

    @property
    def n_ctx(self) -> int | None:
        return self.info.n_ctx


class TelemetryPoller:
    """Polls one server. Prometheus gauges average over the window between two scrapes and each
    scrape resets that window, so there must be only one poller per server: use ``for_server``."""

    _instances: dict[str, TelemetryPoller] = {}

    def __init__(self, base_url: str, api_key: str | None = None, interval: float = 1.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.interval = interval
        self.stats = ServerStats(reachable=False)
        self._listeners: list[Callable[[ServerStats], None]] = []
        self._task: asyncio.Task[None] | None = None

    @classmethod
    def for_server(cls, base_url: str, api_key: str | None = None, interval: float = 1.0) -> TelemetryPoller:
        key = base_url.rstrip("/")
        if key not in cls._instances:
            cls._instances[key] = cls(key, api_key, interval)
        return cls._instances[key]

    def subscribe(self, listener: Callable[[ServerStats], None]) -> None:
        self._listeners.append(listener)

    async def poll_once(self, client: httpx2.AsyncClient | None = None) -> ServerStats:
        owned = client is None
        client = client or httpx2.AsyncClient(timeout=5.0)
        headers = auth_headers(self.api_key)
        try:
            metrics_text, props, slots = await asyncio.gather(
                _get_text(client, f"{self.base_url}/metrics", headers),
                _get_json(client, f"{self.base_url}/props", headers),
                _get_json(client, f"{self.base_url}/slots", headers),
            )
        finally:
            if owned:
                await client.aclose()
        reachable = props is not None or metrics_text is not None
        metrics = parse_metrics(metrics_text) if metrics_text else None
        info = ServerInfo.from_json(
            props if isinstance(props, dict) else None, slots if isinstance(slots, list) else None
        )
        stats = replace(
            self.stats,
            at=time.time(),
            reachable=reachable,
            info=info if reachable else self.stats.info,
            metrics=metrics or self.stats.metrics,
        )
        self._publish(stats)
        return stats

    def _publish(self, stats: ServerStats) -> None:
        self.stats = stats
        for listener in list(self._listeners):
            listener(stats)

    def start(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._run(), name=f"telemetry {self.base_url}")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
            self._task = None
        self._instances.pop(self.base_url, None)

    async def _run(self) -> None:
        async with httpx2.AsyncClient(timeout=5.0) as client:
            while True:
                try:
                    await self.poll_once(client)
                except Exception:  # noqa: BLE001  one odd answer (or listener) must not end the polling
                    with contextlib.suppress(Exception):
                        self._publish(replace(self.stats, at=time.time(), reachable=False))
                await asyncio.sleep(self.interval)


async def _get_text(client: httpx2.AsyncClient, url: str, headers: dict[str, str]) -> str | None:
    try:
        response = await client.get(url, headers=headers)
    except httpx2.HTTPError:
        return None
    return response.text if response.status_code == 200 else None


async def _get_json(client: httpx2.AsyncClient, url: str, headers: dict[str, str]) -> Any:
    text = await _get_text(client, url, headers)
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None
