"""One streamed chat completion: deltas out as events, the assembled message at the end."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from openai import AsyncOpenAI

from agent.events import Event, Metrics, PromptProgress, ReasoningDelta, TextDelta


@dataclass
class StreamedToolCall:
    id: str
    name: str
    arguments_text: str = ""


@dataclass
class StepResult:
    text: str = ""
    reasoning: str = ""
    tool_calls: list[StreamedToolCall] = field(default_factory=list)
    finish_reason: str | None = None
    timings: dict[str, Any] | None = None
    usage: dict[str, Any] | None = None


async def stream_completion(
    client: AsyncOpenAI,
    *,
    model: str,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]],
    result: StepResult,
    n_ctx: int | None,
    sampling: dict[str, Any],
) -> AsyncIterator[Event]:
    """Fill ``result`` while yielding text, reasoning and metrics events."""
    calls: dict[int, StreamedToolCall] = {}
    # The history and the tool schemas travel in extra_body, which the SDK merges into the JSON
    # as it is. Passed as typed parameters, the SDK walks every message and schema on every
    # request (tens of ms once the history is long): that would be the agent's largest overhead.
    body: dict[str, Any] = {"messages": messages, "timings_per_token": True, "return_progress": True, **sampling}
    if tools:
        body["tools"] = tools
    stream = await client.chat.completions.create(
        model=model,
        messages=[],
        stream=True,
        stream_options={"include_usage": True},
        extra_body=body,
    )
    async for chunk in stream:
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
            result.timings = timings
            yield _metrics(timings, n_ctx)
        if chunk.usage is not None:
            result.usage = chunk.usage.model_dump()
        if not chunk.choices:
            continue
        choice = chunk.choices[0]
        delta = choice.delta
        reasoning = (delta.model_extra or {}).get("reasoning_content")
        if reasoning:
            result.reasoning += reasoning
            yield ReasoningDelta(reasoning)
        if delta.content:
            result.text += delta.content
            yield TextDelta(delta.content)
        for tc in delta.tool_calls or []:
            call = calls.get(tc.index)
            if call is None:
                call = calls[tc.index] = StreamedToolCall(id=tc.id or f"call_{tc.index}", name="")
            if tc.function is not None:
                if tc.function.name:
                    call.name += tc.function.name
                if tc.function.arguments:
                    call.arguments_text += tc.function.arguments
        if choice.finish_reason:
            result.finish_reason = choice.finish_reason
    result.tool_calls = [calls[i] for i in sorted(calls)]


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
