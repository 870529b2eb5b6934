"""The one typed event stream the agent emits. The TUI and the headless runner both consume it;
the session file stores part of it.

What is persisted: the loop hands these to its sink (``Agent.sink``, which appends them to the
session file) as well as yielding them: TurnStarted, MessageAppended, HistoryReplaced,
ToolCallStarted, ToolCallFinished, ApprovalRequested, Notice, ErrorEvent
and TurnFinished. Some go to the sink only: the TurnFinished of a cancelled turn and the
MessageAppended results given to calls the turn left unanswered (the turn is over when they
happen), and the record of the model requests, RequestSetup and RequestRecorded, which front
ends do not need (they have Metrics) but ``localagent bench --replay`` does. Only yielded, never persisted, is the live progress of a request: TextDelta,
ReasoningDelta, ToolCallDelta, PromptProgress and Metrics.

Resuming reads MessageAppended and HistoryReplaced back (agent.sessions.resume). Each event
class names its ``type`` once, as the default of its ``type`` field; code that matches stored
events uses the class attribute (``MessageAppended.type``), never the string.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Literal

FinishReason = Literal[
    "done", "max_turns", "timeout", "cancelled", "error", "format_errors", "loop", "denied", "empty_answer", "length"
]


@dataclass(frozen=True)
class Event:
    type: str = field(init=False, default="event")

    def to_dict(self) -> dict[str, Any]:
        # Not dataclasses.asdict: it deep-copies every field, and the history it carries is large.
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True)
class TurnStarted(Event):
    # The turn's number in the conversation, from 1 (a resumed conversation counts on).
    turn: int
    text: str
    type: str = field(init=False, default="turn_started")


@dataclass(frozen=True)
class TextDelta(Event):
    text: str
    type: str = field(init=False, default="text_delta")


@dataclass(frozen=True)
class ReasoningDelta(Event):
    text: str
    type: str = field(init=False, default="reasoning_delta")


@dataclass(frozen=True)
class ToolCallDelta(Event):
    """Part of a native tool call as the model streams it: the call's ``index`` in its reply,
    its id and name as known so far, and the next piece of its JSON arguments."""

    index: int
    call_id: str
    name: str
    arguments: str
    type: str = field(init=False, default="tool_call_delta")


@dataclass(frozen=True)
class ToolCallStarted(Event):
    call_id: str
    name: str
    arguments: dict[str, Any]
    summary: str
    type: str = field(init=False, default="tool_call_started")


@dataclass(frozen=True)
class ToolCallFinished(Event):
    call_id: str
    name: str
    output: str
    is_error: bool
    duration_s: float
    metadata: dict[str, Any] = field(default_factory=dict)
    type: str = field(init=False, default="tool_call_finished")


@dataclass(frozen=True)
class ApprovalRequested(Event):
    """The loop is waiting for a person's answer about this call (asked through the front end's
    ``approve`` callback, agent.approval); front ends show the call as waiting."""

    call_id: str
    name: str
    summary: str
    arguments: dict[str, Any]
    reason: str
    diff: str | None = None
    rule: str = ""  # what "allow always" would allow
    type: str = field(init=False, default="approval_requested")


@dataclass(frozen=True)
class Metrics(Event):
    """Live numbers from the server's ``timings`` during one request."""

    predicted_n: int
    predicted_per_second: float | None
    prompt_n: int
    cache_n: int
    prompt_per_second: float | None
    draft_n: int | None
    draft_n_accepted: int | None
    context_used: int
    n_ctx: int | None
    type: str = field(init=False, default="metrics")


@dataclass(frozen=True)
class SpeculationChosen(Event):
    """The drafting this request asks the server for, and why (see agent.speculation_policy)."""

    kind: str
    n_max: int | None  # None: the server's own settings; 0: no drafting
    reason: str
    type: str = field(init=False, default="speculation")


@dataclass(frozen=True)
class PromptProgress(Event):
    """The server is reading the prompt: ``processed`` of ``total`` tokens (``cache`` reused)."""

    processed: int
    total: int
    cache: int
    type: str = field(init=False, default="prompt_progress")


@dataclass(frozen=True)
class MessageAppended(Event):
    """A message added to the conversation history, exactly as sent to the server."""

    message: dict[str, Any]
    type: str = field(init=False, default="message")


@dataclass(frozen=True)
class HistoryReplaced(Event):
    """Compaction rewrote the history; resuming starts from these messages."""

    messages: list[dict[str, Any]]
    type: str = field(init=False, default="history_replaced")


@dataclass(frozen=True)
class Notice(Event):
    """Something the user should know that is not an error (compaction, a retry, a restart)."""

    text: str
    type: str = field(init=False, default="notice")


@dataclass(frozen=True)
class ErrorEvent(Event):
    message: str
    type: str = field(init=False, default="error")


@dataclass(frozen=True)
class TurnFinished(Event):
    """The end of a turn (one user message and all the agent did for it; see agent.loop.AgentConfig).

    ``steps`` is how many model requests the turn made; ``reason`` "max_turns" means it stopped
    at the step limit (``agent.max_steps``), and ``message`` says so in words."""

    reason: FinishReason
    final_text: str
    steps: int
    prompt_tokens: int
    completion_tokens: int
    message: str = ""
    type: str = field(init=False, default="turn_finished")


@dataclass(frozen=True)
class RequestSetup(Event):
    """What every later model request sends besides the history: the system prompt, the tool
    schemas, the sampling fields and the model name. Recorded before an agent's first request,
    so that a session can be replayed request by request."""

    system: str
    tools: list[dict[str, Any]]
    sampling: dict[str, Any]
    model: str
    type: str = field(init=False, default="request_setup")


@dataclass(frozen=True)
class RequestRecorded(Event):
    """One model request that completed: it sent the first ``messages`` messages of the history
    as it stood (the system prompt included), under the last RequestSetup before it."""

    messages: int
    finish_reason: str | None
    # The server's own numbers for it (llama-server's ``timings``; empty from other servers).
    timings: dict[str, Any]
    usage: dict[str, Any]
    duration_s: float
    type: str = field(init=False, default="request_recorded")
