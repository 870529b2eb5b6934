"""Run the benchmark: each target in turn, one warm-up request, the measured runs, then stop it."""

from __future__ import annotations

import asyncio
import shlex
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import httpx2

from server.bench.client import (
    Endpoint,
    describe_failure,
    fetch_props,
    request_body,
    scrape_metrics,
    stream_chat,
)
from server.bench.load import busy_neighbours
from server.bench.prompts import WARMUP_PROMPT
from server.bench.results import BenchSettings, RequestResult, SpecMetrics, TargetResult
from server.bench.workload import Row, Workload
from server.engines import engine_named
from server.engines.identity import identify_engine
from server.errors import ServerError
from server.manager import ServerHandle, ServerManager
from server.secret_argv import redact_argv
from server.supervisor import ServerState
from server.telemetry import MetricsSnapshot


@dataclass(frozen=True)
class Target:
    """A profile to start, or a server already running at a URL."""

    label: str
    profile: str | None = None
    endpoint: Endpoint | None = None
    settings: dict[str, Any] = field(default_factory=dict)  # swept speculative values, for the report
    notes: tuple[str, ...] = ()  # what planning the command line had to say
    # This target's own requests (the shared workload with per-request settings), or None.
    workload: Workload | None = None


class Observer(Protocol):
    def status(self, text: str) -> None: ...

    def advance(self, result: RequestResult | None, steps: int = 1) -> None: ...


def total_steps(targets: Sequence[Target], workload: Workload) -> int:
    return len(targets) * (1 + len(workload.rows()))


async def run_targets(
    targets: Sequence[Target],
    workload: Workload,
    settings: BenchSettings,
    manager: ServerManager | None,
    observer: Observer,
    api_key: str | None = None,
) -> list[TargetResult]:
    results: list[TargetResult] = []
    async with httpx2.AsyncClient() as client:
        for target in targets:
            # --load N: the neighbours are busy from before the server starts (as when a build
            # already runs beside the agent), so a server choosing its threads sees them.
            async with busy_neighbours(settings.load):
                results.append(await _run_target(client, target, workload, settings, manager, observer, api_key))
    return results


async def _run_target(
    client: httpx2.AsyncClient,
    target: Target,
    workload: Workload,
    settings: BenchSettings,
    manager: ServerManager | None,
    observer: Observer,
    api_key: str | None,
) -> TargetResult:
    workload = target.workload or workload
    result = TargetResult(
        label=target.label,
        kind="profile" if target.profile else "url",
        settings=target.settings,
        notes=list(target.notes),
    )
    handle: ServerHandle | None = None
    endpoint = target.endpoint
    stop: list[str] | None = None
    try:
        if target.profile is not None:
            assert manager is not None
            profile = manager.profiles[target.profile]
            result.profile = profile.name
            result.speculative = profile.speculative.type
            stop = list(profile.stop)
            observer.status(f"starting {target.label}")
            try:
                handle = await manager.start_in_process(target.profile, port="auto")
            except ServerError as exc:
                return _all_failed(result, workload, observer, f"the server did not start: {_one_line(exc)}")
            if handle.record is not None:
                result.command = shlex.join(redact_argv(handle.record.argv))
            endpoint = Endpoint(handle.base_url, api_key)
        assert endpoint is not None
        await _describe_server(client, endpoint, result)
        observer.status(f"{target.label}: warm-up")
        warmup = RequestResult(prompt=WARMUP_PROMPT.name, run=0, seed=settings.seed)
        body = request_body(endpoint, WARMUP_PROMPT.text, settings.warmup_max_tokens, settings.seed, settings)
        try:
            await stream_chat(client, endpoint, body, warmup)
        except Exception as exc:  # noqa: BLE001 - any failure of the warm-up is reported the same way
            warmup.ok, warmup.error = False, describe_failure(exc)
            result.notes.append(f"the warm-up request failed: {warmup.error}")
        observer.advance(warmup)

        before = await scrape_metrics(client, endpoint)
        # vLLM and SGLang put no draft counts in their answers: for them each request is bracketed
        # by two scrapes of /metrics, whose difference is that request's drafting (one request at a time).
        endpoint.per_request_metrics = before is not None and not engine_named(before.engine).drafts_per_request
        await _measure_all(client, endpoint, workload, stop, handle, observer, result)
        after = await scrape_metrics(client, endpoint)
        result.metrics = spec_metrics(before, after)
    finally:
        if handle is not None:
            observer.status(f"stopping {target.label}")
            await handle.close()
    workload.order(result.requests)
    return result


async def _describe_server(client: httpx2.AsyncClient, endpoint: Endpoint, result: TargetResult) -> None:
    """Who serves the target: URL, model and build (llama-server's /props), engine and version."""
    result.base_url = endpoint.base_url
    props = await fetch_props(client, endpoint)
    result.model = props.get("model_path")
    result.build_info = props.get("build_info")
    result.engine = (await identify_engine(endpoint.base_url, client, endpoint.api_key)).describe()


async def _measure_all(
    client: httpx2.AsyncClient,
    endpoint: Endpoint,
    workload: Workload,
    stop: list[str] | None,
    handle: ServerHandle | None,
    observer: Observer,
    result: TargetResult,
) -> None:
    rows = workload.rows()
    for i, row in enumerate(rows):
        observer.status(f"{result.label}: {row.label}")
        measured = await _measure(client, endpoint, workload, row, stop)
        workload.measured(row, measured)
        result.requests.append(measured)
        observer.advance(measured)
        died = None if measured.ok else await _server_died(handle)
        if died is not None:
            # The rest cannot succeed; say why once instead of timing out on each of them.
            result.notes.append(f"the server went down during the run: {died}")
            for later in rows[i + 1 :]:
                result.requests.append(
                    RequestResult(prompt=later.name, run=later.run, ok=False, error="the server had died")
                )
            observer.advance(None, len(rows) - i - 1)
            break


async def _measure(
    client: httpx2.AsyncClient, endpoint: Endpoint, workload: Workload, row: Row, stop: list[str] | None
) -> RequestResult:
    measured = RequestResult(prompt=row.name, run=row.run, seed=workload.seed(row))
    body = workload.body(endpoint, row, stop)
    first = await scrape_metrics(client, endpoint) if endpoint.per_request_metrics else None
    try:
        await stream_chat(client, endpoint, body, measured)
    except Exception as exc:  # noqa: BLE001 - a failed request is a failed row, never a crashed bench
        measured.ok, measured.error = False, describe_failure(exc)
    if first is not None and measured.ok and measured.draft_n is None:
        drafts_from_metrics(measured, first, await scrape_metrics(client, endpoint))
    return measured


def drafts_from_metrics(measured: RequestResult, before: MetricsSnapshot, after: MetricsSnapshot | None) -> None:
    """One request's drafted and accepted tokens from the engine's counters around it."""
    if after is None:
        return
    delta = after.since(before)
    if delta.draft_tokens_total and delta.draft_tokens_total > 0:
        measured.draft_n = int(delta.draft_tokens_total)
        measured.draft_accepted = int(delta.accepted_tokens_total or 0)


async def _server_died(handle: ServerHandle | None, wait_s: float = 3.0) -> str | None:
    """Why a server this bench started is gone, or None while it still serves."""
    supervisor = handle.supervisor if handle is not None else None
    if supervisor is None:
        return None
    # The supervisor learns of the exit from the event loop; give it a moment after a failed request.
    deadline = time.monotonic() + wait_s
    while supervisor.status.state == ServerState.READY and supervisor.process.running:
        if time.monotonic() > deadline:
            return None
        await asyncio.sleep(0.1)
    # The process says how it ended (a signal named with its cause), not a message to parse.
    code = supervisor.process.returncode
    how = (
        supervisor.process.exit_reason(code, while_loading=False).headline
        if code is not None
        else "llama-server exited"
    )
    return f"{how}; its log: {supervisor.log_path}"


def _all_failed(result: TargetResult, workload: Workload, observer: Observer, reason: str) -> TargetResult:
    result.error = reason
    rows = workload.rows()
    result.requests.extend(RequestResult(prompt=row.name, run=row.run, ok=False, error=reason) for row in rows)
    workload.order(result.requests)
    observer.advance(None, 1 + len(rows))
    return result


def spec_metrics(before: MetricsSnapshot | None, after: MetricsSnapshot | None) -> SpecMetrics | None:
    if before is None or after is None:
        return None
    delta = after.since(before)
    if delta.tokens_predicted_total < 0:
        return None  # the counters went back: the server restarted in between, the difference means nothing
    return SpecMetrics(
        tokens_predicted=delta.tokens_predicted_total,
        drafts=delta.drafts_total,
        draft_tokens=delta.draft_tokens_total,
        accepted_tokens=delta.accepted_tokens_total,
        acceptance=delta.acceptance,
        mean_accepted_length=delta.mean_accepted_length,
        acceptance_by_position=list(delta.acceptance_by_position),
    )


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
