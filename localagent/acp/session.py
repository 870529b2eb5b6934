"""One ACP session: an agent built (in the background, so the editor hears about a loading server
instead of waiting in silence) for the session's directory, its turns streamed as updates, its
approvals asked of the person through the client, and cancellation.

The agent is the one ``localagent run`` and the TUI build (``localagent.agent_setup``): the same
options, permission policy and sandbox; no front end gets looser rules.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, cast

from acp import RequestError
from acp.schema import AllowedOutcome, PermissionOption, PromptResponse, Usage

from agent.approval import Approval, ApprovalRequest
from agent.events import (
    ErrorEvent,
    Event,
    MessageAppended,
    Metrics,
    Notice,
    ReasoningDelta,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
    TurnFinished,
)
from localagent.acp import updates
from localagent.agent_setup import AgentRuntime
from server.supervisor import SupervisorStatus

# What the person picks when the policy asks; the option ids are agent.approval's answers.
PERMISSION_OPTIONS = [
    PermissionOption(option_id="once", name="Allow once", kind="allow_once"),
    PermissionOption(option_id="always", name="Allow for this session", kind="allow_always"),
    PermissionOption(option_id="deny", name="Reject", kind="reject_once"),
]
# Live numbers ride on updates at most this often (a token stream sends many more).
META_EVERY_S = 0.25

Send = Callable[[Any, dict[str, Any]], Awaitable[None]]
Ask = Callable[[Any], Awaitable[Any]]

_STOP_REASONS = {"done": "end_turn", "max_turns": "max_turn_requests", "length": "max_tokens", "cancelled": "cancelled"}


@dataclass
class AcpSession:
    session_id: str
    mode: str
    send: Send  # one session/update, with the notification's _meta
    ask: Ask  # session/request_permission with a ToolCallUpdate
    runtime: AgentRuntime | None = None
    building: asyncio.Task[AgentRuntime] | None = None
    statuses: asyncio.Queue[str] = field(default_factory=asyncio.Queue)
    turn: asyncio.Task[PromptResponse] | None = None
    # Set from a prompt's arrival to its answer, so a second prompt (or a cancel) that comes while
    # the first still waits for the agent to be built is seen.
    busy: bool = False
    cancelled: asyncio.Event = field(default_factory=asyncio.Event)
    _last_meta: float = 0.0

    def on_status(self, status: SupervisorStatus) -> None:
        """The managed server's progress while the session is being built: shown at the first prompt."""
        state = getattr(status.state, "value", status.state)
        self.statuses.put_nowait(f"llama-server {state}" + (f": {status.message}" if status.message else ""))

    async def ready(self) -> AgentRuntime:
        """The agent, once built; until then, the server's progress reaches the editor as thoughts."""
        if self.runtime is not None:
            return self.runtime
        assert self.building is not None
        while not self.building.done():
            getter = asyncio.ensure_future(self.statuses.get())
            done, _ = await asyncio.wait({getter, self.building}, return_when=asyncio.FIRST_COMPLETED)
            if getter in done:
                await self.send(updates.thought(getter.result() + "\n"), {})
            else:
                getter.cancel()
        if self.building.cancelled():
            raise RequestError.invalid_request(
                {"message": "this session was closed (loaded again, or the agent stops)"}
            )
        try:
            self.runtime = self.building.result()
        except Exception as exc:  # noqa: BLE001 - any failure to build is told to the editor as one line
            raise RequestError.internal_error({"message": f"localagent could not start: {exc}"}) from None
        if self.runtime.agent.policy.mode != self.mode:
            self.runtime.agent.set_mode(self.mode)
        for note in self.runtime.notes:
            await self.send(updates.thought(note + "\n"), {})
        return self.runtime

    def set_mode(self, mode: str) -> None:
        self.mode = mode
        if self.runtime is not None:
            self.runtime.agent.set_mode(mode)

    async def prompt(self, text: str) -> PromptResponse:
        if self.busy:
            raise RequestError.invalid_request({"message": "a prompt is already running in this session"})
        self.busy = True
        self.cancelled.clear()
        try:
            runtime = await self._ready_unless_cancelled()
            if runtime is None:
                return PromptResponse(stop_reason="cancelled")
            self.turn = asyncio.ensure_future(self._run(runtime, text))
            try:
                return await asyncio.shield(self.turn)
            except asyncio.CancelledError:
                self.turn.cancel()
                raise
        finally:
            self.busy = False

    async def _ready_unless_cancelled(self) -> AgentRuntime | None:
        """The agent; None when the person cancels while it is still being built."""
        if self.runtime is not None:
            return self.runtime
        ready = asyncio.ensure_future(self.ready())
        stop = asyncio.ensure_future(self.cancelled.wait())
        try:
            await asyncio.wait({ready, stop}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stop.cancel()
        if not ready.done():
            ready.cancel()  # only the wait: the build itself goes on for the next prompt
            return None
        return ready.result()

    def cancel(self) -> None:
        self.cancelled.set()
        if self.turn is not None and not self.turn.done():
            self.turn.cancel()

    async def _run(self, runtime: AgentRuntime, text: str) -> PromptResponse:
        numbers = updates.LiveNumbers()
        views: dict[str, updates.ToolCallView] = {}
        finished: TurnFinished | None = None
        events = runtime.agent.run_turn(text)
        try:
            async for event in events:
                if isinstance(event, TurnFinished):
                    finished = event
                await self._relay(event, runtime, numbers, views)
        except asyncio.CancelledError:
            # The cancel may land here (asking the person, sending an update) while the turn is
            # parked at a yield: thrown in there, the loop closes its calls and records the end,
            # so the history stays one a server accepts.
            with contextlib.suppress(asyncio.CancelledError, StopAsyncIteration):
                await cast("AsyncGenerator[Event, None]", events).athrow(asyncio.CancelledError())
            return PromptResponse(stop_reason="cancelled", field_meta=numbers.summary())
        summary = numbers.summary()
        reason = _STOP_REASONS.get(finished.reason, "end_turn") if finished else "end_turn"
        usage = Usage(
            input_tokens=numbers.prompt_tokens,
            output_tokens=numbers.completion_tokens,
            total_tokens=numbers.prompt_tokens + numbers.completion_tokens,
            cached_read_tokens=numbers.cached_tokens,
        )
        return PromptResponse(stop_reason=reason, usage=usage, field_meta=summary)  # type: ignore[arg-type]  # the library types stop_reason as a Literal; ours is one of them

    # long: one branch per kind of event, each a line or two; splitting them would hide the mapping.
    async def _relay(
        self, event: Event, runtime: AgentRuntime, numbers: updates.LiveNumbers, views: dict[str, updates.ToolCallView]
    ) -> None:
        workspace = runtime.agent.tool_ctx.workspace
        while not self.statuses.empty():  # a restart of the server, mid-turn
            await self.send(updates.thought(self.statuses.get_nowait() + "\n"), {})
        if isinstance(event, TextDelta):
            await self.send(updates.message(event.text), self._meta(numbers))
        elif isinstance(event, ReasoningDelta):
            await self.send(updates.thought(event.text), self._meta(numbers))
        elif isinstance(event, Metrics):
            numbers.take(event)
        elif isinstance(event, MessageAppended) and event.message.get("role") == "assistant":
            numbers.end_request()
        elif isinstance(event, ToolCallStarted):
            update, view = updates.started(event, workspace)
            views[event.call_id] = view
            await self.send(update, {})
        elif isinstance(event, ToolCallFinished):
            if event.call_id in views:
                view = views.pop(event.call_id)
            else:  # refused before it started (malformed, unknown tool)
                start, view = updates.started(ToolCallStarted(event.call_id, event.name, {}, event.name), workspace)
                await self.send(start, {})
            await self.send(updates.finished(event, view), {})
        elif isinstance(event, Notice):
            await self.send(updates.thought(f"localagent: {event.text}\n"), {})
        elif isinstance(event, ErrorEvent):
            await self.send(updates.message(f"\n\nError: {event.message}\n"), {})
        elif isinstance(event, TurnFinished) and event.message and event.reason not in ("done", "cancelled"):
            await self.send(updates.message(f"\n\n({event.message})\n"), {})

    async def approve(self, request: ApprovalRequest) -> Approval:
        """The agent's ``approve``: ask the person through the editor. A client that cannot answer
        (or a request cancelled with the turn) has not allowed anything."""
        reason = f'{request.reason}\n\n"Allow for this session" allows {request.rule} until the session ends.'
        call = updates.permission_call(request.call_id, request.name, request.summary, reason, request.diff)
        try:
            response = await self.ask(call)
        except Exception:  # noqa: BLE001 - a client that cannot answer has not allowed anything
            return Approval("deny")
        outcome = response.outcome
        return Approval.of(outcome.option_id if isinstance(outcome, AllowedOutcome) else "deny", request)

    def _meta(self, numbers: updates.LiveNumbers) -> dict[str, Any]:
        loop = asyncio.get_running_loop()
        if loop.time() - self._last_meta < META_EVERY_S:
            return {}
        self._last_meta = loop.time()
        return numbers.meta()

    async def close(self) -> None:
        self.cancel()
        if self.turn is not None:
            with contextlib.suppress(BaseException):
                await self.turn
        if self.building is not None and not self.building.done():
            self.building.cancel()
        runtime = self.runtime
        if runtime is None and self.building is not None and self.building.done() and not self.building.cancelled():
            runtime = self.building.result() if self.building.exception() is None else None
        if runtime is not None:
            await runtime.close()
