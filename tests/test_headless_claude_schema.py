"""A reader of Claude Code's headless output, strict the way the Agent SDK's message parser is:
every line a JSON object with a ``type``, dispatched on system / assistant / user / result /
stream_event, each message's required fields present with the right types, no unknown message
type, and a final result. The end-to-end tests (test_headless_stream_json.py) pipe
`localagent run ... --output-format stream-json` into it; the tests here pin the reader itself.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field, ValidationError


class _Message(BaseModel):
    # Strict types; unknown fields are allowed, as the SDK ignores them.
    model_config = ConfigDict(extra="allow", strict=True)


class TextBlock(_Message):
    type: Literal["text"]
    text: str


class ThinkingBlock(_Message):
    type: Literal["thinking"]
    thinking: str
    signature: str


class ToolUseBlock(_Message):
    type: Literal["tool_use"]
    id: str
    name: str
    input: dict[str, Any]


class ToolResultBlock(_Message):
    type: Literal["tool_result"]
    tool_use_id: str
    content: str | list[dict[str, Any]] | None = None
    is_error: bool | None = None


AssistantBlock = Annotated[TextBlock | ThinkingBlock | ToolUseBlock, Field(discriminator="type")]
UserBlock = Annotated[TextBlock | ToolResultBlock, Field(discriminator="type")]


class Usage(_Message):
    input_tokens: int
    output_tokens: int
    cache_read_input_tokens: int
    cache_creation_input_tokens: int


class McpServer(_Message):
    name: str
    status: str


class SystemInit(_Message):
    type: Literal["system"]
    subtype: Literal["init"]
    session_id: str
    uuid: str
    cwd: str
    model: str
    tools: list[str]
    mcp_servers: list[McpServer]
    permissionMode: Literal["default", "acceptEdits", "bypassPermissions", "plan"]
    apiKeySource: str
    slash_commands: list[str]
    output_style: str


class AssistantBody(_Message):
    id: str
    type: Literal["message"]
    role: Literal["assistant"]
    model: str
    content: list[AssistantBlock]
    stop_reason: str | None
    usage: Usage


class AssistantMessage(_Message):
    type: Literal["assistant"]
    message: AssistantBody
    parent_tool_use_id: str | None
    session_id: str
    uuid: str


class UserBody(_Message):
    role: Literal["user"]
    content: str | list[UserBlock]


class UserMessage(_Message):
    type: Literal["user"]
    message: UserBody
    parent_tool_use_id: str | None
    session_id: str
    uuid: str


class StreamEvent(_Message):
    type: Literal["stream_event"]
    uuid: str
    session_id: str
    event: dict[str, Any]
    parent_tool_use_id: str | None


class Denial(_Message):
    tool_name: str
    tool_use_id: str
    tool_input: dict[str, Any]


class ResultMessage(_Message):
    type: Literal["result"]
    subtype: Literal["success", "error_max_turns", "error_during_execution", "error_max_budget_usd"]
    is_error: bool
    duration_ms: int
    duration_api_ms: int
    num_turns: int
    # None only for a run that failed before it had a session.
    session_id: str | None
    result: str | None = None
    total_cost_usd: float | int
    usage: Usage
    permission_denials: list[Denial]


# The Anthropic streaming events a stream_event may wrap, and the deltas it may carry.
EVENT_TYPES = {
    "message_start",
    "content_block_start",
    "content_block_delta",
    "content_block_stop",
    "message_delta",
    "message_stop",
}
DELTA_TYPES = {"text_delta": "text", "thinking_delta": "thinking", "input_json_delta": "partial_json"}


class SchemaError(AssertionError):
    pass


@dataclass
class ClaudeRun:
    """One parsed run, its messages in order."""

    init: SystemInit | None = None
    assistant: list[AssistantMessage] = field(default_factory=list)
    user: list[UserMessage] = field(default_factory=list)
    events: list[StreamEvent] = field(default_factory=list)
    result: ResultMessage | None = None
    order: list[str] = field(default_factory=list)

    def text_deltas(self) -> str:
        return "".join(
            e.event["delta"]["text"]
            for e in self.events
            if e.event["type"] == "content_block_delta" and e.event["delta"]["type"] == "text_delta"
        )


def _check_event(message: StreamEvent) -> None:
    event = message.event
    kind = event.get("type")
    if kind not in EVENT_TYPES:
        raise SchemaError(f"unknown stream event type {kind!r}")
    if kind in ("content_block_start", "content_block_delta", "content_block_stop") and not isinstance(
        event.get("index"), int
    ):
        raise SchemaError(f"{kind} without an integer index")
    if kind == "content_block_delta":
        delta = event.get("delta") or {}
        key = DELTA_TYPES.get(delta.get("type"))
        if key is None or not isinstance(delta.get(key), str):
            raise SchemaError(f"bad content_block_delta {delta!r}")
    if kind == "message_start" and not isinstance((event.get("message") or {}).get("id"), str):
        raise SchemaError("message_start without a message id")


def _parse_line(run: ClaudeRun, data: dict[str, Any]) -> None:
    kind = data["type"]
    if kind == "system":
        if data.get("subtype") != "init":
            return  # other system messages (hooks, compaction) are allowed and ignored
        if run.init is not None:
            raise SchemaError("a second init message")
        run.init = SystemInit.model_validate(data)
    elif kind == "assistant":
        run.assistant.append(AssistantMessage.model_validate(data))
    elif kind == "user":
        run.user.append(UserMessage.model_validate(data))
    elif kind == "stream_event":
        event = StreamEvent.model_validate(data)
        _check_event(event)
        run.events.append(event)
    elif kind == "result":
        run.result = ResultMessage.model_validate(data)
    else:
        raise SchemaError(f"unknown message type {kind!r}")


def parse_claude_stream(text: str) -> ClaudeRun:
    """Parse stream-json output; any departure from the schema raises SchemaError."""
    run = ClaudeRun()
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except ValueError as exc:
            raise SchemaError(f"line {number} is not JSON: {line[:80]!r}") from exc
        if not isinstance(data, dict) or not isinstance(data.get("type"), str):
            raise SchemaError(f"line {number} has no message type: {line[:80]!r}")
        if run.result is not None:
            raise SchemaError(f"line {number} comes after the result")
        try:
            _parse_line(run, data)
        except ValidationError as exc:
            raise SchemaError(f"line {number} ({data['type']}): {exc}") from exc
        run.order.append(data["type"])
    if run.result is None:
        raise SchemaError("no result message at the end")
    if run.order != ["result"]:
        if run.order[0] != "system" or run.init is None:
            raise SchemaError(f"the first message is {run.order[0]!r}, not the init message")
        ids = {run.init.session_id, run.result.session_id}
        ids |= {m.session_id for m in [*run.assistant, *run.user, *run.events]}
        if len(ids) != 1:
            raise SchemaError(f"messages name different sessions: {sorted(map(str, ids))}")
    return run


# -- the reader itself -------------------------------------------------------------------------

SESSION = "20260101-000000-abcdef"
INIT = {
    "type": "system",
    "subtype": "init",
    "session_id": SESSION,
    "uuid": "u",
    "cwd": "/w",
    "model": "m",
    "tools": ["bash"],
    "mcp_servers": [],
    "permissionMode": "acceptEdits",
    "apiKeySource": "none",
    "slash_commands": [],
    "output_style": "default",
}
USAGE = {"input_tokens": 1, "output_tokens": 2, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}
RESULT = {
    "type": "result",
    "subtype": "success",
    "is_error": False,
    "duration_ms": 5,
    "duration_api_ms": 3,
    "num_turns": 1,
    "result": "ok",
    "session_id": SESSION,
    "total_cost_usd": 0,
    "usage": USAGE,
    "permission_denials": [],
}
ASSISTANT = {
    "type": "assistant",
    "parent_tool_use_id": None,
    "session_id": SESSION,
    "uuid": "a",
    "message": {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "stop_reason": "end_turn",
        "usage": USAGE,
        "content": [{"type": "text", "text": "ok"}],
    },
}


def _lines(*messages: dict[str, Any]) -> str:
    return "\n".join(json.dumps(m) for m in messages) + "\n"


def test_the_reader_accepts_a_well_formed_run():
    run = parse_claude_stream(_lines(INIT, ASSISTANT, RESULT))
    assert run.order == ["system", "assistant", "result"] and run.result.result == "ok"


@pytest.mark.parametrize(
    ("messages", "words"),
    [
        ([INIT, ASSISTANT], "no result"),
        ([INIT, {**ASSISTANT, "type": "assistant_message"}, RESULT], "unknown message type"),
        ([INIT, {k: v for k, v in RESULT.items() if k != "num_turns"}], "num_turns"),
        ([INIT, {**RESULT, "is_error": "no"}], "is_error"),
        ([ASSISTANT, RESULT], "not the init message"),
        ([INIT, {**ASSISTANT, "session_id": "other"}, RESULT], "different sessions"),
        ([INIT, RESULT, ASSISTANT], "after the result"),
        ([INIT, {**ASSISTANT, "message": {**ASSISTANT["message"], "content": [{"type": "text"}]}}, RESULT], "text"),
        (
            [
                INIT,
                {
                    "type": "stream_event",
                    "uuid": "e",
                    "session_id": SESSION,
                    "parent_tool_use_id": None,
                    "event": {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta"}},
                },
                RESULT,
            ],
            "content_block_delta",
        ),
    ],
)
def test_the_reader_rejects_what_the_sdk_would(messages, words):
    with pytest.raises(SchemaError, match=words):
        parse_claude_stream(_lines(*messages))


def test_a_missing_type_or_a_line_that_is_not_json_is_rejected():
    with pytest.raises(SchemaError, match="no message type"):
        parse_claude_stream(_lines(INIT, {"subtype": "init"}, RESULT))
    with pytest.raises(SchemaError, match="not JSON"):
        parse_claude_stream(_lines(INIT) + "progress: 50%\n" + _lines(RESULT))
