"""The agent loop: ask the model, run the tools it calls, repeat until it answers.

History is append-only and the system prompt and tool list never change, so every request
extends the previous one and llama-server's prompt cache serves the prefix. Only compaction
rewrites history, and only when the context is nearly full.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import openai
from json_repair import repair_json
from openai import AsyncOpenAI

from agent.compaction import Compactor
from agent.completion import StepResult, StreamedToolCall, stream_completion
from agent.events import (
    ApprovalRequested,
    ErrorEvent,
    Event,
    FinishReason,
    HistoryReplaced,
    MessageAppended,
    Notice,
    ToolCallFinished,
    ToolCallStarted,
    TurnFinished,
    TurnStarted,
)
from agent.sandbox_modes import sandbox_for
from tools.sandbox import sandbox_available
from agent.permissions import PermissionPolicy, resolve_without_person, rule_for_call
from agent.preview import preview_diff
from agent.toolcall_text import format_error_feedback, parse_text_tool_calls, validate_arguments
from tools.base import ToolContext, ToolResult

LOOP_NUDGE_AT = 3
LOOP_STOP_AT = 5
FORMAT_ERRORS_STOP_AT = 3


class AgentTool(Protocol):
    name: str
    description: str
    parameters: dict[str, Any]
    reads_only: bool

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult: ...

    def describe_call(self, args: dict[str, Any], workspace: Any = None) -> str: ...


@dataclass
class AgentConfig:
    model: str = "local"
    max_steps: int = 50
    compact_threshold: float = 0.8
    headless: bool = False
    sampling: dict[str, Any] = field(default_factory=dict)


Recover = Callable[[], Awaitable[bool]]
EventSink = Callable[[Event], None]


class TurnStop(Exception):
    """Ends the turn with a named status."""

    def __init__(self, reason: FinishReason, message: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass
class _Call:
    id: str
    name: str
    arguments: dict[str, Any] | None
    problem: str | None = None


class Agent:
    def __init__(
        self,
        client: AsyncOpenAI,
        tools: list[AgentTool],
        tool_ctx: ToolContext,
        policy: PermissionPolicy,
        system_prompt: str,
        config: AgentConfig,
        *,
        n_ctx: int | None = None,
        recover: Recover | None = None,
        history: list[dict[str, Any]] | None = None,
        sink: EventSink | None = None,
        before_turn: Callable[[int], Awaitable[None]] | None = None,
    ) -> None:
        self.client = client
        self.tools = {tool.name: tool for tool in tools}
        self.tool_ctx = tool_ctx
        self.policy = policy
        self.config = config
        self.n_ctx = n_ctx
        self.recover = recover
        self.sink = sink
        self.before_turn = before_turn  # e.g. a checkpoint of the working tree
        # Built once: the serialised tool list is part of the cached prompt prefix.
        self.tool_specs = [
            {"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}
            for t in tools
        ]
        system = {"role": "system", "content": system_prompt}
        # A resumed history holds only appended messages: the system prompt is rebuilt, not stored.
        history = [m for m in history or [] if m.get("role") != "system"]
        self.messages: list[dict[str, Any]] = [system, *history]
        self.turns = sum(1 for m in self.messages if m["role"] == "user")
        self.compactor = Compactor(client, config.model)
        self.last_context_used = 0
        self.totals = {"prompt_tokens": 0, "completion_tokens": 0, "tool_calls": 0}

    def _emit(self, event: Event) -> Event:
        if self.sink is not None:
            self.sink(event)
        return event

    def _append(self, message: dict[str, Any]) -> Event:
        # The history is sent as UTF-8 JSON: a lone surrogate the model (or a file) produced
        # has no UTF-8 form and would fail every later request, so it is replaced here, once.
        message = _valid_unicode(message)
        self.messages.append(message)
        return self._emit(MessageAppended(message))

    async def run_turn(self, user_text: str) -> AsyncIterator[Event]:
        self.turns += 1
        if self.before_turn is not None:
            await self.before_turn(self.turns)
        yield self._emit(TurnStarted(self.turns, user_text))
        yield self._append({"role": "user", "content": user_text})
        steps = 0
        final_text = ""
        usage_before = dict(self.totals)
        reason: FinishReason = "done"
        message = ""
        pending: list[_Call] = []
        try:
            loop_guard = _LoopGuard()
            format_errors = 0
            nudged_empty = False
            while True:
                if steps >= self.config.max_steps:
                    raise TurnStop("max_turns", f"stopped after {steps} model steps (--max-turns)")
                steps += 1
                if self._near_full():
                    async for event in self._compact("the context is nearly full"):
                        yield event
                result = StepResult()
                async for event in self._request(result):
                    yield event
                calls, text = self._calls_from(result)
                final_text = text
                assistant: dict[str, Any] = {"role": "assistant", "content": text or None}
                if calls:
                    assistant["tool_calls"] = [
                        {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": _args_text(c)}}
                        for c in calls
                    ]
                if result.reasoning:
                    assistant["reasoning_content"] = result.reasoning
                yield self._append(assistant)
                if not calls and text.strip():
                    break
                if not calls:
                    # An empty reply, or one cut off by the token limit before any text, is not an
                    # answer: ask once more, then stop with a status that says which it was.
                    cut = result.finish_reason == "length"
                    if nudged_empty:
                        raise TurnStop(
                            "length" if cut else "empty_answer",
                            "the model hit its token limit without answering (finish_reason=length); "
                            "raise agent.max_tokens or the context size" if cut
                            else "the model answered with nothing, twice",
                        )
                    nudged_empty = True
                    yield self._append({"role": "user", "content": EMPTY_REPLY_NUDGE})
                    continue
                pending = list(calls)
                for call in calls:
                    outcome: list[ToolResult] = []
                    async for event in self._run_call(call, outcome):
                        yield event
                    pending.remove(call)
                    tool_result = outcome[0]
                    repeats = loop_guard.record(call)
                    if repeats >= LOOP_NUDGE_AT and call.problem is None:
                        tool_result.output += (
                            f"\n\n[localagent] This exact call has now been made {repeats} times in a row and "
                            "its result will not change. Do something different, or answer if you are done."
                        )
                    yield self._append(self._tool_message(call, tool_result))
                    format_errors = format_errors + 1 if call.problem is not None else 0
                    if format_errors >= FORMAT_ERRORS_STOP_AT:
                        raise TurnStop("format_errors", f"{format_errors} malformed tool calls in a row")
                    if repeats >= LOOP_STOP_AT:
                        raise TurnStop("loop", f"the same {call.name} call was repeated {repeats} times")
        except TurnStop as stop:
            reason, message = stop.reason, str(stop)
        except asyncio.CancelledError:
            self._close_pending(pending, "cancelled by the user")
            self._emit(self._turn_finished("cancelled", final_text, steps, usage_before, "cancelled by the user"))
            raise
        except _RequestFailed as failure:
            reason, message = "error", str(failure)
            yield self._emit(ErrorEvent(message))
        self._close_pending(pending, f"not run: the turn ended ({reason})")
        yield self._emit(self._turn_finished(reason, final_text, steps, usage_before, message))

    async def compact_now(self) -> AsyncIterator[Event]:
        """Compact on request (the TUI's /compact), summarising earlier turns."""
        async for event in self._compact("asked for", aggressive=True):
            yield event

    def clear(self) -> Event:
        """Forget the conversation (the TUI's /clear); the system prompt stays byte-identical."""
        self.messages = self.messages[:1]
        self.last_context_used = 0
        return self._emit(HistoryReplaced(list(self.messages)))

    def set_mode(self, mode: str) -> None:
        # The bash sandbox follows the mode (read-only cannot write); "off" stays only in full-auto.
        current = self.tool_ctx.sandbox
        requested = "off" if current.mode == "off" else None
        # An unsandboxed full-auto has the network; leaving it must not carry that over.
        network = current.network and current.mode != "off"
        self.tool_ctx.sandbox = sandbox_for(mode, requested, network=network)
        self.policy = self.policy.with_mode(mode, bash_sandboxed=sandbox_available(self.tool_ctx.sandbox))

    def _turn_finished(
        self, reason: FinishReason, text: str, steps: int, before: dict[str, int], message: str
    ) -> TurnFinished:
        return TurnFinished(
            reason=reason,
            final_text=text,
            steps=steps,
            prompt_tokens=self.totals["prompt_tokens"] - before["prompt_tokens"],
            completion_tokens=self.totals["completion_tokens"] - before["completion_tokens"],
            message=message,
        )

    def _close_pending(self, pending: list[_Call], why: str) -> None:
        """Every tool call in history gets a result, or the next request is malformed."""
        for call in pending:
            self._append(self._tool_message(call, ToolResult.error(why)))
        pending.clear()

    # -- requests ----------------------------------------------------------------------------

    async def _request(self, result: StepResult) -> AsyncIterator[Event]:
        for attempt in (1, 2):
            try:
                async for event in stream_completion(
                    self.client,
                    model=self.config.model,
                    messages=self.messages,
                    tools=self.tool_specs,
                    result=result,
                    n_ctx=self.n_ctx,
                    sampling=self.config.sampling,
                ):
                    yield event
                break
            except openai.BadRequestError as exc:
                if attempt == 1 and _is_context_overflow(exc):
                    async for event in self._compact("the server said the context is full", aggressive=True):
                        yield event
                    _reset(result)
                    continue
                raise _RequestFailed(f"the model server refused the request: {_api_message(exc)}") from None
            except (openai.APIConnectionError, openai.APITimeoutError, openai.InternalServerError) as exc:
                if attempt == 1 and self.recover is not None:
                    yield self._emit(Notice("the model server stopped answering; waiting for it to come back"))
                    if await self.recover():
                        yield self._emit(Notice("the model server is back; retrying the request"))
                        _reset(result)
                        continue
                raise _RequestFailed(f"the model server failed mid-request ({_api_message(exc)})") from None
            except openai.APIError as exc:
                raise _RequestFailed(f"the model server returned an error: {_api_message(exc)}") from None
        self._account(result)

    def _account(self, result: StepResult) -> None:
        timings = result.timings or {}
        usage = result.usage or {}
        prompt = int(timings.get("prompt_n", 0)) + int(timings.get("cache_n", 0)) or int(usage.get("prompt_tokens", 0))
        completion = int(timings.get("predicted_n", 0)) or int(usage.get("completion_tokens", 0))
        self.totals["prompt_tokens"] += prompt
        self.totals["completion_tokens"] += completion
        self.last_context_used = prompt + completion

    def _near_full(self) -> bool:
        return bool(self.n_ctx) and self.last_context_used > self.config.compact_threshold * self.n_ctx

    async def _compact(self, why: str, aggressive: bool = False) -> AsyncIterator[Event]:
        before = len(json.dumps(self.messages))
        self.messages = await self.compactor.compact(self.messages, aggressive=aggressive)
        after = len(json.dumps(self.messages))
        self.last_context_used = 0
        yield self._emit(Notice(f"compacted the conversation ({why}): {before} -> {after} characters"))
        yield self._emit(HistoryReplaced(list(self.messages)))

    # -- tool calls ----------------------------------------------------------------------------

    def _calls_from(self, result: StepResult) -> tuple[list[_Call], str]:
        if result.tool_calls:
            return [self._native_call(c) for c in result.tool_calls], result.text
        parsed = parse_text_tool_calls(result.text, set(self.tools), {n: t.parameters for n, t in self.tools.items()})
        calls = [
            _Call(id=f"call_text_{self.turns}_{i}", name=c.name, arguments=c.arguments)
            for i, c in enumerate(parsed.calls)
        ]
        if parsed.errors and not calls:
            # Something call-shaped that we could not use: tell the model how to call.
            calls = [_Call(id=f"call_text_{self.turns}_err", name="invalid", arguments=None, problem=parsed.errors[0])]
        return calls, parsed.text_without_calls if calls else result.text

    def _native_call(self, call: StreamedToolCall) -> _Call:
        if call.name not in self.tools:
            return _Call(call.id, call.name, None, f"there is no tool named {call.name!r}")
        text = call.arguments_text.strip() or "{}"
        try:
            arguments = json.loads(text)
        except ValueError:
            repaired = repair_json(text, return_objects=True)
            arguments = repaired if isinstance(repaired, dict) and repaired else None
        if not isinstance(arguments, dict):
            return _Call(call.id, call.name, None, f"the arguments of {call.name} are not a JSON object")
        return _Call(call.id, call.name, arguments)

    async def _run_call(self, call: _Call, outcome: list[ToolResult]) -> AsyncIterator[Event]:
        tool = self.tools.get(call.name)
        problem = call.problem
        if problem is None and tool is not None and call.arguments is not None:
            problem = validate_arguments(call.arguments, tool.parameters)
            call.problem = problem
        if problem is not None or tool is None or call.arguments is None:
            result = ToolResult.error(format_error_feedback(problem or "invalid call", sorted(self.tools)))
            yield self._emit(ToolCallFinished(call.id, call.name, result.output, True, 0.0))
            outcome.append(result)
            return
        summary = tool.describe_call(call.arguments, self.tool_ctx.workspace)
        yield self._emit(ToolCallStarted(call.id, call.name, call.arguments, summary))
        decision = self.policy.decide(
            tool.name, tool.reads_only, summary, workspace=self.tool_ctx.workspace, arguments=call.arguments
        )
        if decision.action == "ask" and self.config.headless:
            decision = resolve_without_person(decision)
        if decision.action == "ask":
            future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
            yield self._emit(
                ApprovalRequested(
                    call.id, call.name, summary, call.arguments, decision.reason,
                    preview_diff(call.name, call.arguments, self.tool_ctx), future,
                )
            )
            answer = await future
            if answer == "always":
                self.policy.add_rule("allow", rule_for_call(tool.name, summary))
            if answer == "deny":
                result = ToolResult.error("The user denied this call. Do not retry it; ask or try another way.")
                yield self._emit(ToolCallFinished(call.id, call.name, result.output, True, 0.0))
                outcome.append(result)
                return
        elif decision.action == "deny":
            result = ToolResult.error(f"Not allowed: {decision.reason}")
            yield self._emit(ToolCallFinished(call.id, call.name, result.output, True, 0.0))
            outcome.append(result)
            return
        started = time.monotonic()
        result = await tool.run(call.arguments, self.tool_ctx)
        self.totals["tool_calls"] += 1
        yield self._emit(
            ToolCallFinished(
                call.id, call.name, result.output, result.is_error, time.monotonic() - started,
                _jsonable(result.metadata),
            )
        )
        outcome.append(result)

    @staticmethod
    def _tool_message(call: _Call, result: ToolResult) -> dict[str, Any]:
        content = result.output
        if result.is_error and not content.startswith("Error"):
            content = f"Error: {content}"
        return {"role": "tool", "tool_call_id": call.id, "content": content}


EMPTY_REPLY_NUDGE = (
    "[localagent] Your last reply was empty. Answer the task in text, or call a tool to make progress."
)


class _RequestFailed(Exception):
    pass


class _LoopGuard:
    def __init__(self) -> None:
        self.last: str | None = None
        self.count = 0

    def record(self, call: _Call) -> int:
        signature = json.dumps([call.name, call.arguments], sort_keys=True)
        self.count = self.count + 1 if signature == self.last else 1
        self.last = signature
        return self.count


def _valid_unicode(value: Any) -> Any:
    if isinstance(value, str):
        try:
            value.encode("utf-8")
            return value
        except UnicodeEncodeError:
            return value.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    if isinstance(value, dict):
        return {key: _valid_unicode(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_valid_unicode(item) for item in value]
    return value


def _args_text(call: _Call) -> str:
    return json.dumps(call.arguments if call.arguments is not None else {}, ensure_ascii=False)


def _reset(result: StepResult) -> None:
    fresh = StepResult()
    for name in fresh.__dataclass_fields__:
        setattr(result, name, getattr(fresh, name))


def _is_context_overflow(exc: openai.BadRequestError) -> bool:
    text = str(exc).lower()
    return "exceed_context_size" in text or "context size" in text or "context length" in text


def _api_message(exc: openai.APIError) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])
    return str(exc.message if hasattr(exc, "message") else exc).splitlines()[0]


def _jsonable(data: dict[str, Any]) -> dict[str, Any]:
    return json.loads(json.dumps(data, default=str))
