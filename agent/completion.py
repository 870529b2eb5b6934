"""One streamed chat completion: deltas out as events, the assembled message at the end, and
the model server's errors put into words."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any

import openai
from openai import AsyncOpenAI

from agent.event_stream import streamed
from agent.events import Event, Metrics, PromptProgress, ReasoningDelta, TextDelta, ToolCallDelta

__all__ = ["StepResult", "StreamedToolCall", "api_message", "is_context_overflow", "stream_completion"]


@dataclass
class StreamedToolCall:
    id: str
    name: str
    arguments_text: str = ""


@dataclass
class StepResult:
    """The model's reply in one step, as assembled from the stream."""

    text: str = ""
    reasoning: str = ""
    tool_calls: list[StreamedToolCall] = field(default_factory=list)
    finish_reason: str | None = None
    timings: dict[str, Any] | None = None
    usage: dict[str, Any] | None = None


@streamed
async def stream_completion(
    client: AsyncOpenAI,
    *,
    model: str,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]],
    n_ctx: int | None,
    sampling: dict[str, Any],
    extra: dict[str, Any] | None = None,
) -> AsyncIterator[Event | StepResult]:
    """Text, reasoning, progress and metrics events as they stream in; ``.result`` is the reply."""
    # The history and the tool schemas travel in extra_body, which the SDK merges into the JSON
    # as it is. Passed as typed parameters, the SDK walks every message and schema on every
    # request (tens of ms once the history is long): that would be the agent's largest overhead.
    body: dict[str, Any] = {
        "messages": messages,
        "timings_per_token": True,
        "return_progress": True,
        **sampling,
        **(extra or {}),
    }
    if tools:
        body["tools"] = tools
    stream = await client.chat.completions.create(
        model=model,
        messages=[],
        stream=True,
        stream_options={"include_usage": True},
        extra_body=body,
    )
    reply = _Assembly(n_ctx)
    async for chunk in stream:
        for event in reply.add(chunk):
            yield event
    yield reply.finish()


class _Assembly:
    """Builds the StepResult chunk by chunk, saying what each chunk brought as events."""

    def __init__(self, n_ctx: int | None) -> None:
        self.n_ctx = n_ctx
        self.result = StepResult()
        self.calls: dict[int, StreamedToolCall] = {}
        self.first_output_at: float | None = None  # when the answer began to arrive here

    def add(self, chunk: Any) -> Iterator[Event]:
        extra = chunk.model_extra or {}
        progress = extra.get("prompt_progress")
        if progress and progress.get("total"):
            yield PromptProgress(
                processed=int(progress.get("processed") or 0),
                total=int(progress["total"]),
                cache=int(progress.get("cache") or 0),
            )
        timings = extra.get("timings")
        # Chunks that only report prompt progress carry empty timings: no figures to show yet.
        if timings and (timings.get("prompt_n") or timings.get("cache_n") or timings.get("predicted_n")):
            self.result.timings = timings
            yield _metrics(timings, self.n_ctx)
        if chunk.usage is not None:
            self.result.usage = chunk.usage.model_dump()
            if self.result.timings is None:
                # vLLM and SGLang send no timings: the usage counts, over the time the answer
                # took to arrive, are the figures there are (drafting shows through /metrics).
                yield _usage_metrics(self.result.usage, self.first_output_at, self.n_ctx)
        if not chunk.choices:
            return
        if self.first_output_at is None:
            self.first_output_at = time.monotonic()
        choice = chunk.choices[0]
        delta = choice.delta
        reasoning = (delta.model_extra or {}).get("reasoning_content")
        if reasoning:
            self.result.reasoning += reasoning
            yield ReasoningDelta(reasoning)
        if delta.content:
            self.result.text += delta.content
            yield TextDelta(delta.content)
        for tc in delta.tool_calls or []:
            call = self._add_call_delta(tc)
            yield ToolCallDelta(tc.index, call.id, call.name, (tc.function and tc.function.arguments) or "")
        if choice.finish_reason:
            self.result.finish_reason = choice.finish_reason

    def _add_call_delta(self, tc: Any) -> StreamedToolCall:
        call = self.calls.get(tc.index)
        if call is None:
            call = self.calls[tc.index] = StreamedToolCall(id=tc.id or f"call_{tc.index}", name="")
        if tc.function is not None:
            if tc.function.name:
                call.name += tc.function.name
            if tc.function.arguments:
                call.arguments_text += tc.function.arguments
        return call

    def finish(self) -> StepResult:
        self.result.tool_calls = [self.calls[i] for i in sorted(self.calls)]
        return self.result


def _metrics(timings: dict[str, Any], n_ctx: int | None) -> Metrics:
    cache_n = int(timings.get("cache_n") or 0)
    prompt_n = int(timings.get("prompt_n") or 0)
    predicted_n = int(timings.get("predicted_n") or 0)
    draft_n = timings.get("draft_n")
    accepted = timings.get("draft_n_accepted")
    return Metrics(
        predicted_n=predicted_n,
        predicted_per_second=timings.get("predicted_per_second"),
        prompt_n=prompt_n,
        cache_n=cache_n,
        prompt_per_second=timings.get("prompt_per_second"),
        draft_n=None if draft_n is None else int(draft_n),
        draft_n_accepted=None if accepted is None else int(accepted),
        context_used=cache_n + prompt_n + predicted_n,
        n_ctx=n_ctx,
    )


def _usage_metrics(usage: dict[str, Any], first_output_at: float | None, n_ctx: int | None) -> Metrics:
    prompt = int(usage.get("prompt_tokens") or 0)
    completion = int(usage.get("completion_tokens") or 0)
    cached = int((usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0)
    elapsed = time.monotonic() - first_output_at if first_output_at is not None else 0.0
    return Metrics(
        predicted_n=completion,
        predicted_per_second=completion / elapsed if completion > 1 and elapsed > 0 else None,
        prompt_n=prompt - cached,
        cache_n=cached,
        prompt_per_second=None,
        draft_n=None,
        draft_n_accepted=None,
        context_used=prompt + completion,
        n_ctx=n_ctx,
    )


def is_context_overflow(exc: openai.BadRequestError) -> bool:
    text = str(exc).lower()
    return "exceed_context_size" in text or "context size" in text or "context length" in text


def api_message(exc: openai.APIError) -> str:
    """The server's own error message, on one line."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])
    return str(exc.message if hasattr(exc, "message") else exc).splitlines()[0]
