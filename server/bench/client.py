"""One streamed chat completion, timed from the client's side, and the few GETs a bench needs."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

import httpx2

from server.bench.results import BenchSettings, RequestResult
from server.http import auth_headers, server_root
from server.props import fetch_props as fetch_server_props
from server.telemetry import MetricsSnapshot, RequestTimings, parse_metrics

# Generation can pause for long between chunks while a big model processes its prompt.
REQUEST_TIMEOUT = httpx2.Timeout(connect=10.0, read=600.0, write=30.0, pool=10.0)


class StreamError(Exception):
    """The server answered, but not with a complete stream."""


@dataclass
class Endpoint:
    base_url: str  # without /v1
    api_key: str | None = None
    model: str | None = None  # some OpenAI-compatible servers insist on it; llama-server ignores it
    per_request_metrics: bool = False  # scrape /metrics around each request (engines without timings)

    @property
    def headers(self) -> dict[str, str]:
        return auth_headers(self.api_key)


def normalize_base_url(url: str) -> str:
    """The server's root for a URL given as the root, its /v1 or its chat completions endpoint."""
    return server_root(url.strip().rstrip("/").removesuffix("/v1/chat/completions"))


def request_body(
    endpoint: Endpoint, prompt: str, max_tokens: int, seed: int, settings: BenchSettings
) -> dict[str, Any]:
    sampling = settings.sampling
    body: dict[str, Any] = {
        "messages": [{"role": "user", "content": prompt}],
        "max_tokens": max_tokens,
        "temperature": sampling.temperature,
        "top_k": sampling.top_k,
        "top_p": sampling.top_p,
        "min_p": sampling.min_p,
        "seed": seed,
        "stream": True,
        "stream_options": {"include_usage": True},
        "timings_per_token": True,
    }
    if endpoint.model:
        body["model"] = endpoint.model
    return body


async def stream_chat(
    client: httpx2.AsyncClient, endpoint: Endpoint, body: dict[str, Any], result: RequestResult
) -> RequestResult:
    """Send one streamed request and fill ``result``; errors raise (the caller marks the row failed)."""
    stream = _Stream(result)
    sent_at = time.perf_counter()
    async with client.stream(
        "POST",
        f"{endpoint.base_url}/v1/chat/completions",
        json=body,
        headers=endpoint.headers,
        timeout=REQUEST_TIMEOUT,
    ) as response:
        if response.status_code != 200:
            await response.aread()
            raise StreamError(f"HTTP {response.status_code}: {_error_message(response)}")
        async for line in response.aiter_lines():
            if not line.startswith("data:"):
                continue
            payload = line[5:].strip()
            if payload == "[DONE]":
                stream.done = True
                break
            stream.take(time.perf_counter(), json.loads(payload))
    finished_at = time.perf_counter()
    if not stream.done:
        raise StreamError("the stream ended before [DONE]; the server may have died")
    return stream.fill(sent_at, finished_at)


@dataclass(frozen=True)
class _Mark:
    """When a content chunk arrived here, and the server's cumulative timings it carried."""

    at: float
    timings: RequestTimings | None


@dataclass
class _Stream:
    """What one streamed answer has brought so far."""

    result: RequestResult
    timings: RequestTimings | None = None
    usage: dict[str, Any] = field(default_factory=dict)
    first: _Mark | None = None
    last: _Mark | None = None
    done: bool = False

    def take(self, now: float, chunk: dict[str, Any]) -> None:
        """One ``data:`` chunk, arrived at ``now``."""
        if "error" in chunk:
            raise StreamError(f"the server reported: {_describe_error(chunk['error'])}")
        if chunk.get("timings"):
            self.timings = RequestTimings.from_json(chunk["timings"]) or self.timings
        has_content = False
        for choice in chunk.get("choices") or ():
            delta = choice.get("delta") or {}
            has_content = has_content or bool(delta.get("content") or delta.get("reasoning_content"))
            if choice.get("finish_reason"):
                self.result.finish_reason = choice["finish_reason"]
        if has_content:
            mark = _Mark(now, self.timings if chunk.get("timings") else None)
            self.first = self.first or mark
            self.last = mark
        if chunk.get("usage"):
            self.usage = chunk["usage"]

    def fill(self, sent_at: float, finished_at: float) -> RequestResult:
        """The result row: the usage counts, the server's own timings and the observed rates."""
        result, usage, timings = self.result, self.usage, self.timings
        result.wall_s = finished_at - sent_at
        if self.first is not None:
            result.ttft_s = self.first.at - sent_at
        result.prompt_tokens = usage.get("prompt_tokens")
        result.completion_tokens = usage.get("completion_tokens")
        result.cached_tokens = (usage.get("prompt_tokens_details") or {}).get("cached_tokens")
        if timings is not None:
            result.prompt_tokens = result.prompt_tokens or timings.cache_n + timings.prompt_n
            result.completion_tokens = timings.predicted_n or result.completion_tokens
            result.server_tps = timings.predicted_per_second or None
            result.gen_seconds = timings.predicted_ms / 1000.0
            result.prompt_seconds = timings.prompt_ms / 1000.0
            result.draft_n = timings.draft_n
            result.draft_accepted = timings.draft_n_accepted
            # Servers that leave cached_tokens out of the usage still say it in their timings.
            if result.cached_tokens is None:
                result.cached_tokens = timings.cache_n
            result.prompt_processed = timings.prompt_n
        result.client_tps, result.server_window_tps = observed_rates(result.completion_tokens, self.first, self.last)
        return result


def observed_rates(tokens: int | None, first: _Mark | None, last: _Mark | None) -> tuple[float | None, float | None]:
    """(client tok/s, server tok/s over the same window), measured on the same footing.

    The window runs from the arrival of the first content chunk to the arrival of the last. With
    ``timings_per_token`` each chunk carries the server's cumulative predicted_n / predicted_ms, so
    the tokens generated inside the window and the server's own time for them are known exactly:
    the client figure and the server figure then count the same tokens over the same stretch of
    generation, and their ratio is the cost of streaming, parsing and this client alone. (Comparing
    with predicted_per_second over the whole answer would not be fair: the server can hold the first
    tokens back while it checks for stop strings or tool-call markup, which shortens the client's
    window but not the server's.) Without per-chunk timings: all tokens over the client's window.
    """
    if first is None or last is None or last.at <= first.at:
        return None, None
    wall = last.at - first.at
    if first.timings is not None and last.timings is not None:
        tokens_in_window = last.timings.predicted_n - first.timings.predicted_n
        server_ms = last.timings.predicted_ms - first.timings.predicted_ms
        if tokens_in_window > 0 and server_ms > 0:
            return tokens_in_window / wall, tokens_in_window / (server_ms / 1000.0)
    if not tokens:
        return None, None
    return tokens / wall, None


async def scrape_metrics(client: httpx2.AsyncClient, endpoint: Endpoint) -> MetricsSnapshot | None:
    try:
        response = await client.get(f"{endpoint.base_url}/metrics", headers=endpoint.headers, timeout=10.0)
    except httpx2.HTTPError:
        return None
    if response.status_code != 200:
        return None  # started without --metrics, or not llama-server
    try:
        return parse_metrics(response.text)
    except ValueError:
        return None


async def fetch_props(client: httpx2.AsyncClient, endpoint: Endpoint) -> dict[str, Any]:
    return await fetch_server_props(endpoint.base_url, client, endpoint.api_key, timeout=10.0) or {}


async def probe(client: httpx2.AsyncClient, endpoint: Endpoint) -> str | None:
    """None when the URL answers HTTP at all; otherwise why not, in a few words. Also learns the
    model id from /v1/models, for servers that want it in the request."""
    try:
        response = await client.get(f"{endpoint.base_url}/v1/models", headers=endpoint.headers, timeout=5.0)
    except httpx2.HTTPError as exc:
        return _transport_reason(exc)
    if response.status_code == 200:
        try:
            models = response.json().get("data") or []
            endpoint.model = endpoint.model or (models[0].get("id") if models else None)
        except (ValueError, AttributeError, IndexError):
            pass
    return None


def _transport_reason(exc: httpx2.HTTPError) -> str:
    if isinstance(exc, httpx2.ConnectError):
        return "connection refused or host not found"
    if isinstance(exc, httpx2.TimeoutException):
        return "no answer within 5 s"
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def _error_message(response: httpx2.Response) -> str:
    try:
        return _describe_error(response.json().get("error"))
    except (ValueError, AttributeError):
        return response.text.strip().splitlines()[0][:200] if response.text.strip() else "no body"


def _describe_error(error: Any) -> str:
    if isinstance(error, dict):
        return str(error.get("message") or error)
    return str(error)


def describe_failure(exc: BaseException) -> str:
    """One line for a failed request, for the report's failed rows."""
    if isinstance(exc, StreamError):
        return str(exc)
    if isinstance(exc, httpx2.ConnectError):
        return "cannot connect to the server (it is not running)"
    if isinstance(exc, httpx2.TimeoutException):
        return "the server stopped answering (timeout)"
    if isinstance(exc, (httpx2.RemoteProtocolError, httpx2.ReadError)):
        return "the connection broke mid-answer; the server may have died"
    if isinstance(exc, ValueError):
        return "the server sent a chunk that is not JSON"
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
