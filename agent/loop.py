"""The agent loop: ask the model, run the tools it calls, repeat until it answers.

History is append-only and the system prompt and tool list never change, so every request
extends the previous one and llama-server's prompt cache serves the prefix. Only compaction
rewrites history, and only when the context is nearly full.

The loop's pieces that both stream events and produce a value (a model request, a tool call)
are agent.event_stream streams: the caller passes the events on, then reads ``.result``.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import openai
from openai import AsyncOpenAI

from agent.approval import Approve
from agent.call_gate import judge_call
from agent.compaction import Compactor
from agent.completion import (
    StepResult,
    api_message,
    is_context_overflow,
    stream_completion,
)
from agent.control_tokens import defanged, defanged_text
from agent.defaults import COMPACT_THRESHOLD, MAX_STEPS
from agent.event_stream import streamed
from agent.events import (
    ErrorEvent,
    Event,
    FinishReason,
    HistoryReplaced,
    MessageAppended,
    Notice,
    RequestRecorded,
    RequestSetup,
    SpeculationChosen,
    ToolCallFinished,
    ToolCallStarted,
    TurnFinished,
    TurnStarted,
)
from agent.hooks import NO_VERDICT, AgentHooks
from agent.json_values import jsonable, map_strings, valid_text
from agent.permissions import PermissionPolicy, sandbox_for
from agent.prompt import place_context, with_context
from agent.speculation_policy import SpeculationPolicy
from agent.toolcalls import (
    AgentTool,
    ToolCall,
    assistant_message,
    calls_in_reply,
    format_error_feedback,
    tool_message,
)
from agent.turn_state import TurnState, TurnStop
from tools.base import ToolContext, ToolResult
from tools.registry import openai_tool_specs
from tools.sandbox import sandbox_available

__all__ = ["Agent", "AgentConfig", "AgentTool", "EventSink", "Recover", "TurnStop"]

EMPTY_REPLY_NUDGE = "[localagent] Your last reply was empty. Answer the task in text, or call a tool to make progress."


@dataclass
class AgentConfig:
    """How the agent runs. The words, used the same way throughout the agent:

    - a *turn* is one user message and everything the agent does for it, up to its answer;
    - a *step* is one model request (with the tool calls of its reply) within a turn.

    ``max_steps`` (the config key ``agent.max_steps``) bounds the steps of one turn. A turn it
    stops ends with the status "max_turns": Claude Code's name for the same limit, kept for
    compatibility, whose "turns" are model steps.
    """

    model: str = "local"
    max_steps: int = MAX_STEPS
    compact_threshold: float = COMPACT_THRESHOLD
    sampling: dict[str, Any] = field(default_factory=dict)
    # Drafting chosen per request; None: the server's own settings for every request (a server
    # that does not honour per-request limits, or `agent.speculation = "server"`).
    speculation: SpeculationPolicy | None = None


Recover = Callable[[], Awaitable[bool]]
EventSink = Callable[[Event], None]


class _RequestFailed(Exception):
    pass


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
        approve: Approve | None = None,
        context: str = "",
    ) -> None:
        self.client = client
        self.tools = {tool.name: tool for tool in tools}
        self.tool_ctx = tool_ctx
        self.policy = policy
        self.config = config
        self.n_ctx = n_ctx
        self.recover = recover
        # Gets every event that goes into the session file; see agent.events for which those are.
        self.sink = sink
        self.before_turn = before_turn  # e.g. a checkpoint of the working tree
        # Asks a person when the policy says ask. None: no one can answer (a headless run), and
        # the call is refused with what would allow it. A front end may set it after building.
        self.approve = approve
        self.context = context  # the session's own context, at the head of the first user message
        # Called before a prompt, around each tool call and at the end of a turn (agent.hooks).
        self.hooks: AgentHooks | None = None
        # Built once: the serialised tool list is part of the cached prompt prefix.
        self.tool_specs = openai_tool_specs(tools)
        system = {"role": "system", "content": system_prompt}
        # A resumed history holds only appended messages: the system prompt is rebuilt, not stored.
        # (defanged: a session saved before control_tokens is read as the model would now see it).
        history = [defanged(m) for m in history or [] if m.get("role") != "system"]
        self.messages: list[dict[str, Any]] = [system, *history]
        # The number of the current turn: user turns so far, for a resumed conversation counted
        # from the user messages in its history.
        self.turns = sum(1 for m in self.messages if m["role"] == "user")
        self.compactor = Compactor(client, config.model)
        self.last_context_used = 0
        self.totals = {"prompt_tokens": 0, "completion_tokens": 0, "tool_calls": 0}
        self._setup_recorded = False

    def emit(self, event: Event) -> Event:
        if self.sink is not None:
            self.sink(event)
        return event

    def _append(self, message: dict[str, Any]) -> Event:
        # The history is sent as UTF-8 JSON: a lone surrogate the model (or a file) produced
        # has no UTF-8 form and would fail every later request, so it is replaced here, once.
        # Text shaped like a template's control token is kept from acting as one (control_tokens).
        message = map_strings(message, lambda text: defanged_text(valid_text(text)))
        self.messages.append(message)
        return self.emit(MessageAppended(message))

    # -- a turn ------------------------------------------------------------------------------

    async def run_turn(self, user_text: str) -> AsyncIterator[Event]:
        """One turn: the user's message, then steps until the model answers or a limit stops it."""
        self.turns += 1
        if self.before_turn is not None:
            await self.before_turn(self.turns)
        yield self.emit(TurnStarted(self.turns, user_text))
        turn = TurnState(usage_before=dict(self.totals))
        hooked = NO_VERDICT if self.hooks is None else await self.hooks.before_prompt(user_text)
        if hooked.decision == "deny":  # the prompt never enters the conversation
            yield self.emit(self._turn_finished(turn, "denied", f"blocked by a hook: {hooked.reason}"))
            return
        context = f"\n\n{hooked.context}" if hooked.context else ""
        rewritten, asked = place_context(self.messages, {"role": "user", "content": user_text + context}, self.context)
        if rewritten is not None:
            self.messages = rewritten
            yield self.emit(HistoryReplaced(list(self.messages)))
        yield self._append(asked)
        reason: FinishReason = "done"
        message = ""
        try:
            while not turn.answered:
                async for event in self._step(turn):
                    yield event
                if turn.answered and self.hooks is not None:
                    async for event in self._stop_hook(turn):
                        yield event
        except TurnStop as stop:
            reason, message = stop.reason, str(stop)
        except asyncio.CancelledError:
            self._close_pending(turn, "cancelled by the user")
            self.emit(self._turn_finished(turn, "cancelled", "cancelled by the user"))
            raise
        except Exception as failure:  # noqa: BLE001 - a request, or a front end's approve or hook: the history stays whole
            reason, message = "error", _failure_line(failure)
            yield self.emit(ErrorEvent(message))
        self._close_pending(turn, f"not run: the turn ended ({reason})")
        yield self.emit(self._turn_finished(turn, reason, message))

    async def _stop_hook(self, turn: TurnState) -> AsyncIterator[Event]:
        """A Stop hook that denies keeps the turn going, its reason the next instruction."""
        assert self.hooks is not None
        verdict = await self.hooks.at_stop(turn.final_text, turn.stop_hooked)
        if verdict.decision == "deny" and verdict.reason:
            turn.answered, turn.stop_hooked = False, True
            yield self._append({"role": "user", "content": verdict.reason})

    async def _step(self, turn: TurnState) -> AsyncIterator[Event]:
        """One step: ask the model, record its reply, run the calls it made."""
        turn.start_step(self.config.max_steps)
        if self._near_full():
            async for event in self._compact("the context is nearly full"):
                yield event
        request = self._request()
        async for event in request:
            yield event
        reply = request.result
        calls, text = calls_in_reply(reply, self.tools, self.turns)
        turn.final_text = text
        yield self._append(assistant_message(text, calls, reply.reasoning))
        if calls:
            async for event in self._run_calls(turn, calls):
                yield event
        elif text.strip():
            turn.answered = True
        else:
            turn.empty_reply(cut=reply.finish_reason == "length")
            yield self._append({"role": "user", "content": EMPTY_REPLY_NUDGE})

    async def _run_calls(self, turn: TurnState, calls: list[ToolCall]) -> AsyncIterator[Event]:
        for index, call in enumerate(calls):
            turn.pending = calls[index:]
            run = self._run_call(call)
            async for event in run:
                yield event
            turn.pending = calls[index + 1 :]
            result = run.result
            result.output += turn.record_call(call)
            yield self._append(tool_message(call, result))
            turn.check_limits(call)

    def _turn_finished(self, turn: TurnState, reason: FinishReason, message: str) -> TurnFinished:
        return TurnFinished(
            reason=reason,
            final_text=turn.final_text,
            steps=turn.steps,
            prompt_tokens=self.totals["prompt_tokens"] - turn.usage_before["prompt_tokens"],
            completion_tokens=self.totals["completion_tokens"] - turn.usage_before["completion_tokens"],
            message=message,
        )

    def _close_pending(self, turn: TurnState, why: str) -> None:
        """Every tool call in history gets a result, or the next request is malformed."""
        for call in turn.pending:
            self._append(tool_message(call, ToolResult.error(why)))
        turn.pending = []

    # -- commands from the front end ---------------------------------------------------------

    async def compact_now(self) -> AsyncIterator[Event]:
        """Compact on request (the TUI's /compact), summarising earlier turns."""
        async for event in self._compact("asked for", aggressive=True):
            yield event

    def clear(self) -> Event:
        """Forget the conversation (the TUI's /clear); the system prompt stays byte-identical."""
        self.messages = self.messages[:1]
        self.last_context_used = 0
        return self.emit(HistoryReplaced(list(self.messages)))

    def set_mode(self, mode: str) -> None:
        # The bash sandbox follows the mode (read-only cannot write); "off" stays only in full-auto.
        current = self.tool_ctx.sandbox
        requested = "off" if current.mode == "off" else None
        # An unsandboxed full-auto has the network; leaving it must not carry that over.
        network = current.network and current.mode != "off"
        self.tool_ctx.sandbox = sandbox_for(mode, requested, network=network, hidden=current.hidden)
        self.policy = self.policy.with_mode(mode, bash_sandboxed=sandbox_available(self.tool_ctx.sandbox))

    # -- requests ----------------------------------------------------------------------------

    @streamed
    async def _request(self) -> AsyncIterator[Event | StepResult]:
        """One model request, retried once: after compacting a context the server found full,
        or after the server came back from a failure."""
        policy = self.config.speculation
        # Chosen once per request: a retry sends the same choice (the policy counts each choice).
        choice = policy.choose(self.messages) if policy is not None else None
        if choice is not None:
            yield self.emit(SpeculationChosen(choice.kind, choice.n_max, choice.reason))
        for attempt in (1, 2):
            sent, started = len(self.messages), time.monotonic()
            completion = stream_completion(
                self.client,
                model=self.config.model,
                messages=self.messages,
                tools=self.tool_specs,
                n_ctx=self.n_ctx,
                sampling=self.config.sampling,
                extra=choice.request_fields() if choice is not None else None,
            )
            try:
                async for event in completion:
                    yield event
            except openai.BadRequestError as exc:
                if attempt == 1 and is_context_overflow(exc):
                    async for event in self._compact("the server said the context is full", aggressive=True):
                        yield event
                    continue
                raise _RequestFailed(f"the model server refused the request: {api_message(exc)}") from None
            except (openai.APIConnectionError, openai.APITimeoutError, openai.InternalServerError) as exc:
                if attempt == 1 and self.recover is not None:
                    yield self.emit(Notice("the model server stopped answering; waiting for it to come back"))
                    if await self.recover():
                        yield self.emit(Notice("the model server is back; retrying the request"))
                        continue
                raise _RequestFailed(f"the model server failed mid-request ({api_message(exc)})") from None
            except openai.APIError as exc:
                raise _RequestFailed(f"the model server returned an error: {api_message(exc)}") from None
            if policy is not None and choice is not None:
                policy.observe(choice, completion.result.timings)
            self._account(completion.result)
            self._record(sent, completion.result, time.monotonic() - started)
            yield completion.result
            return

    def _record(self, sent: int, result: StepResult, duration_s: float) -> None:
        """Into the session only: what was sent and what the server said, for a replay."""
        if not self._setup_recorded:
            self._setup_recorded = True
            system = str(self.messages[0].get("content") or "")
            self.emit(RequestSetup(system, self.tool_specs, dict(self.config.sampling), self.config.model))
        timings = {key: value for key, value in (result.timings or {}).items() if isinstance(value, int | float)}
        self.emit(RequestRecorded(sent, result.finish_reason, timings, dict(result.usage or {}), round(duration_s, 4)))

    def _account(self, result: StepResult) -> None:
        timings = result.timings or {}
        usage = result.usage or {}
        prompt = int(timings.get("prompt_n", 0)) + int(timings.get("cache_n", 0)) or int(usage.get("prompt_tokens", 0))
        completion = int(timings.get("predicted_n", 0)) or int(usage.get("completion_tokens", 0))
        self.totals["prompt_tokens"] += prompt
        self.totals["completion_tokens"] += completion
        self.last_context_used = prompt + completion

    def _near_full(self) -> bool:
        return (
            self.n_ctx is not None
            and self.n_ctx > 0
            and self.last_context_used > self.config.compact_threshold * self.n_ctx
        )

    async def _compact(self, why: str, aggressive: bool = False) -> AsyncIterator[Event]:
        before = len(json.dumps(self.messages))
        self.messages = with_context(await self.compactor.compact(self.messages, aggressive=aggressive), self.context)
        after = len(json.dumps(self.messages))
        self.last_context_used = 0
        yield self.emit(Notice(f"compacted the conversation ({why}): {before} -> {after} characters"))
        yield self.emit(HistoryReplaced(list(self.messages)))

    # -- a tool call -------------------------------------------------------------------------

    @streamed
    async def _run_call(self, call: ToolCall) -> AsyncIterator[Event | ToolResult]:
        """Run one call if it is well-formed and allowed; otherwise its result says why not."""
        tool = self.tools.get(call.name)
        why_not: str | None
        if call.problem is not None or tool is None or call.arguments is None:
            why_not = format_error_feedback(call.problem or "invalid call", sorted(self.tools))
        else:
            summary = tool.describe_call(call.arguments, self.tool_ctx.workspace)
            yield self.emit(ToolCallStarted(call.id, call.name, call.arguments, summary))
            gate = judge_call(self, call, tool, summary)
            async for event in gate:
                yield event
            verdict = gate.result
            why_not = verdict.refusal
            if why_not is None:
                started = time.monotonic()
                result = await tool.run(verdict.arguments, self.tool_ctx)
                if self.hooks is not None:
                    after = await self.hooks.after_call(
                        call.id, call.name, verdict.arguments, result.output, result.is_error
                    )
                    result.output += f"\n\n{after.reason or after.context}" if after.reason or after.context else ""
                self.totals["tool_calls"] += 1
                yield self.emit(
                    ToolCallFinished(
                        call.id,
                        call.name,
                        result.output,
                        result.is_error,
                        time.monotonic() - started,
                        jsonable(result.metadata),
                    )
                )
                yield result
                return
        refused = ToolResult.error(why_not)
        yield self.emit(ToolCallFinished(call.id, call.name, refused.output, True, 0.0))
        yield refused


def _failure_line(failure: Exception) -> str:
    return str(failure) if isinstance(failure, _RequestFailed) else f"{type(failure).__name__}: {failure}"
