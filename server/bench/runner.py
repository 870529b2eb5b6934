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
from server.bench.prompts import WARMUP_PROMPT, BenchPrompt
from server.bench.results import BenchSettings, RequestResult, SpecMetrics, TargetResult
from server.errors import ServerError
from server.manager import ServerHandle, ServerManager
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


class Observer(Protocol):
    def status(self, text: str) -> None: ...

    def advance(self, result: RequestResult | None, steps: int = 1) -> None: ...


def total_steps(targets: Sequence[Target], prompts: Sequence[BenchPrompt], settings: BenchSettings) -> int:
    return len(targets) * (1 + len(prompts) * settings.runs)


async def run_targets(
    targets: Sequence[Target],
    prompts: Sequence[BenchPrompt],
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
                results.append(await _run_target(client, target, prompts, settings, manager, observer, api_key))
    return results


async def _run_target(
    client: httpx2.AsyncClient,
    target: Target,
    prompts: Sequence[BenchPrompt],
    settings: BenchSettings,
    manager: ServerManager | None,
    observer: Observer,
    api_key: str | None,
) -> TargetResult:
    result = TargetResult(
        label=target.label, kind="profile" if target.profile else "url", settings=target.settings,
        notes=list(target.notes),
    )
    handle: ServerHandle | None = None
    endpoint = target.endpoint
    try:
        if target.profile is not None:
            assert manager is not None
            profile = manager.profiles[target.profile]
            result.profile = profile.name
            result.speculative = profile.speculative.type
            observer.status(f"starting {target.label}")
            try:
                handle = await manager.start_in_process(target.profile, port="auto")
            except ServerError as exc:
                return _all_failed(result, prompts, settings, observer, f"the server did not start: {_one_line(exc)}")
            if handle.record is not None:
                result.command = shlex.join(handle.record.argv)
            endpoint = Endpoint(handle.base_url, api_key)
        assert endpoint is not None
        result.base_url = endpoint.base_url
        props = await fetch_props(client, endpoint)
        result.model = props.get("model_path")
        result.build_info = props.get("build_info")

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
        await _measure_all(client, endpoint, prompts, settings, handle, observer, result)
        after = await scrape_metrics(client, endpoint)
        result.metrics = spec_metrics(before, after)
    finally:
        if handle is not None:
            observer.status(f"stopping {target.label}")
            await handle.close()
    _order_rows(result, prompts)
    return result


async def _measure_all(
    client: httpx2.AsyncClient,
    endpoint: Endpoint,
    prompts: Sequence[BenchPrompt],
    settings: BenchSettings,
    handle: ServerHandle | None,
    observer: Observer,
    result: TargetResult,
) -> None:
    plan = [(run, prompt) for run in range(1, settings.runs + 1) for prompt in prompts]
    for i, (run, prompt) in enumerate(plan):
        observer.status(f"{result.label}: {prompt.name} (run {run}/{settings.runs})")
        row = await _measure(client, endpoint, prompt, run, settings)
        result.requests.append(row)
        observer.advance(row)
        died = None if row.ok else await _server_died(handle)
        if died is not None:
            # The rest cannot succeed; say why once instead of timing out on each of them.
            result.notes.append(f"the server went down during the run: {died}")
            for later_run, later_prompt in plan[i + 1 :]:
                result.requests.append(
                    RequestResult(prompt=later_prompt.name, run=later_run, ok=False, error="the server had died")
                )
            observer.advance(None, len(plan) - i - 1)
            break


async def _measure(
    client: httpx2.AsyncClient, endpoint: Endpoint, prompt: BenchPrompt, run: int, settings: BenchSettings
) -> RequestResult:
    seed = settings.seed_for(run)
    row = RequestResult(prompt=prompt.name, run=run, seed=seed)
    body = request_body(endpoint, prompt.text, settings.max_tokens, seed, settings)
    try:
        await stream_chat(client, endpoint, body, row)
    except Exception as exc:  # noqa: BLE001 - a failed request is a failed row, never a crashed bench
        row.ok, row.error = False, describe_failure(exc)
    return row


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
    how = supervisor.process.exit_reason(code, while_loading=False).headline if code is not None else "llama-server exited"
    return f"{how}; its log: {supervisor.log_path}"


def _all_failed(
    result: TargetResult, prompts: Sequence[BenchPrompt], settings: BenchSettings, observer: Observer, reason: str
) -> TargetResult:
    result.error = reason
    for run in range(1, settings.runs + 1):
        for prompt in prompts:
            result.requests.append(RequestResult(prompt=prompt.name, run=run, ok=False, error=reason))
    observer.advance(None, 1 + len(prompts) * settings.runs)
    return result


def _order_rows(result: TargetResult, prompts: Sequence[BenchPrompt]) -> None:
    order = {prompt.name: i for i, prompt in enumerate(prompts)}
    result.requests.sort(key=lambda row: (order.get(row.prompt, len(order)), row.run))


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
