"""Claude Code's headless output (``--output-format json|stream-json``), written from the agent's
event stream, so tools built on `claude -p` read `localagent run` the same way.

stream-json is one JSON object per line: first ``{"type": "system", "subtype": "init", ...}``
(session id, cwd, model, tools, MCP servers, permission mode), then each assistant message as
``{"type": "assistant", "message": {...}}`` with its text, thinking and tool_use blocks and the
request's usage, each tool result as ``{"type": "user", "message": {"content": [tool_result]}}``,
and last ``{"type": "result", ...}``. With ``--include-partial-messages`` each request's tokens
also come as ``{"type": "stream_event", "event": {...}}`` lines (see localagent.stream_partial).
json is the result object alone.

The result carries Claude's fields, then ours under one key, ``localagent`` (status, tok/s,
drafts, prompt-cache reuse, steps, files changed...). The fields of localagent's earlier result
(``status``, ``final_text``, ``message``, ``tool_calls``...) stay at the top level as well, so
scripts written against it keep working. Cost is always 0: the model is yours.
"""

from __future__ import annotations

import json
import math
import time
import uuid
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any, Literal, TextIO

from agent.events import (
    Event,
    MessageAppended,
    Metrics,
    ReasoningDelta,
    TextDelta,
    ToolCallDelta,
    ToolCallFinished,
    ToolCallStarted,
    TurnStarted,
)
from localagent.run_summary import RunSummary
from localagent.stream_partial import PartialMessage

# The Claude Code release whose command line and stream-json this follows (the CLI the Claude Agent
# SDK 0.2.189 bundles). The SDK reads it from the init message and warns when it is missing.
CLAUDE_CODE_CONTRACT = "2.1.332"
# Our modes by the name Claude Code gives the nearest of its own.
PERMISSION_MODES = {"read-only": "plan", "ask": "default", "auto-edit": "acceptEdits", "full-auto": "bypassPermissions"}
MCP_STATUS = {"ready": "connected", "failed": "failed", "starting": "pending", "disconnected": "failed"}
SUBTYPES = {"done": "success", "max_turns": "error_max_turns"}
# How the loop words the result of a call the policy (or a person) refused.
DENIAL_PREFIXES = ("Not allowed:", "The user denied this call")


def localagent_version() -> str:
    try:
        return metadata.version("localagent-dflash")
    except metadata.PackageNotFoundError:
        return "unknown"


def _uuid() -> str:
    return str(uuid.uuid4())


@dataclass
class SessionInfo:
    """What the init message says about the session."""

    session_id: str | None
    cwd: str
    model: str
    tools: list[str] = field(default_factory=list)
    mcp_servers: list[dict[str, str]] = field(default_factory=list)
    mode: str = "auto-edit"


@dataclass
class Usage:
    """Token counts in Anthropic's terms: input_tokens are the prompt tokens the server read,
    cache_read_input_tokens those it reused from its prompt cache."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_input_tokens: int = 0

    @classmethod
    def of(cls, metrics: Metrics | None) -> Usage:
        if metrics is None:
            return cls()
        return cls(metrics.prompt_n, metrics.predicted_n, metrics.cache_n)

    def add(self, other: Usage) -> None:
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.cache_read_input_tokens += other.cache_read_input_tokens

    def to_dict(self) -> dict[str, int]:
        return {
            "input_tokens": self.input_tokens,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": self.cache_read_input_tokens,
            "output_tokens": self.output_tokens,
        }

    @property
    def cache_reuse(self) -> float | None:
        prompt = self.input_tokens + self.cache_read_input_tokens
        return self.cache_read_input_tokens / prompt if prompt else None


class ClaudeStream:
    """Consumes the agent's events; writes the lines of stream-json (``lines``) as they happen,
    and the result object at the end for either format."""

    def __init__(self, info: SessionInfo, out: TextIO, *, lines: bool, partial: bool = False) -> None:
        self.info = info
        self.out = out
        self.lines = lines
        self.partial = partial and lines
        self.usage = Usage()
        self.num_turns = 0
        self.permission_denials: list[dict[str, Any]] = []
        self._calls: dict[str, ToolCallStarted] = {}
        self._call_errors: dict[str, bool] = {}
        self._metrics: Metrics | None = None
        self._message = PartialMessage(info.model)
        self._api_s = 0.0
        self._request_since: float | None = None

    # -- the stream ------------------------------------------------------------------------

    def init(self) -> None:
        self._emit(self.init_message())

    def init_message(self) -> dict[str, Any]:
        info = self.info
        return {
            "type": "system",
            "subtype": "init",
            "cwd": info.cwd,
            "session_id": info.session_id,
            "tools": list(info.tools),
            "mcp_servers": list(info.mcp_servers),
            "model": info.model,
            "permissionMode": PERMISSION_MODES.get(info.mode, "default"),
            "slash_commands": [],
            "apiKeySource": "none",
            "output_style": "default",
            "agents": [],
            "skills": [],
            "plugins": [],
            "uuid": _uuid(),
            "claude_code_version": CLAUDE_CODE_CONTRACT,
            "localagent": {"version": localagent_version(), "mode": info.mode},
        }

    def on_event(self, event: Event) -> None:
        if isinstance(event, (TextDelta, ReasoningDelta)):
            self._open_request()
            if self.partial:
                kind: Literal["text", "thinking"] = "text" if isinstance(event, TextDelta) else "thinking"
                for item in self._message.delta(kind, event.text):
                    self._write_event(item)
        elif isinstance(event, ToolCallDelta):
            self._open_request()
            if self.partial:
                for item in self._message.tool_call_delta(event.index, event.call_id, event.name, event.arguments):
                    self._write_event(item)
        elif isinstance(event, Metrics):
            self._metrics = event
        elif isinstance(event, ToolCallStarted):
            self._calls[event.call_id] = event
        elif isinstance(event, ToolCallFinished):
            self._call_finished(event)
        elif isinstance(event, MessageAppended):
            self._message_appended(event.message)
        elif isinstance(event, TurnStarted):
            self._open_request()

    def _message_appended(self, message: dict[str, Any]) -> None:
        role = message.get("role")
        if role == "assistant":
            self._assistant(message)
        elif role == "tool":
            self._tool_result(message)
            self._request_since = time.monotonic()  # the next request starts after the results
        elif role == "user":
            self._request_since = time.monotonic()

    def _assistant(self, message: dict[str, Any]) -> None:
        if self._request_since is not None:
            self._api_s += time.monotonic() - self._request_since
            self._request_since = None
        self.num_turns += 1
        usage = Usage.of(self._metrics)
        self.usage.add(usage)
        self._metrics = None
        content = content_blocks(message)
        stop_reason = "tool_use" if any(block["type"] == "tool_use" for block in content) else "end_turn"
        for item in self._message.close(stop_reason, usage.output_tokens):
            self._write_event(item)
        body = {
            "id": self._message.message_id,
            "type": "message",
            "role": "assistant",
            "model": self.info.model,
            "content": content,
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": usage.to_dict(),
        }
        self._message = PartialMessage(self.info.model)
        self._emit({"type": "assistant", "message": body, **self._envelope()})

    def _tool_result(self, message: dict[str, Any]) -> None:
        call_id = str(message.get("tool_call_id", ""))
        text = message.get("content")
        text = text if isinstance(text, str) else json.dumps(text, default=str)
        is_error = self._call_errors.pop(call_id, text.startswith("Error"))
        block = {"type": "tool_result", "tool_use_id": call_id, "content": text, "is_error": is_error}
        self._emit({"type": "user", "message": {"role": "user", "content": [block]}, **self._envelope()})

    def _call_finished(self, event: ToolCallFinished) -> None:
        self._call_errors[event.call_id] = event.is_error
        started = self._calls.pop(event.call_id, None)
        if started is not None and event.is_error and event.output.startswith(DENIAL_PREFIXES):
            self.permission_denials.append(
                {"tool_name": event.name, "tool_use_id": event.call_id, "tool_input": started.arguments}
            )

    def _open_request(self) -> None:
        if self._request_since is None:
            self._request_since = time.monotonic()

    # -- the result ------------------------------------------------------------------------

    def finish(self, summary: RunSummary) -> None:
        """The result: the last line of stream-json, or the one object of json."""
        for item in self._message.close(None, 0):  # a request the run stopped in the middle of
            self._write_event(item)
        self._write(self.result_message(summary))

    def result_message(self, summary: RunSummary) -> dict[str, Any]:
        usage = self.usage
        if not self.num_turns or not (usage.input_tokens or usage.output_tokens or usage.cache_read_input_tokens):
            # No timings from this server: its usage counts, all as read prompt tokens.
            usage = Usage(summary.prompt_tokens, summary.completion_tokens, 0)
        message = result_fields(
            summary,
            num_turns=max(self.num_turns, summary.steps),
            duration_api_ms=round(self._api_s * 1000),
            usage=usage,
            model=self.info.model,
            permission_denials=self.permission_denials,
        )
        message["localagent"]["mode"] = self.info.mode
        return message

    # -- writing ---------------------------------------------------------------------------

    def _envelope(self) -> dict[str, Any]:
        return {"parent_tool_use_id": None, "session_id": self.info.session_id, "uuid": _uuid()}

    def _write_event(self, event: dict[str, Any]) -> None:
        self._emit({"type": "stream_event", "event": event, **self._envelope()})

    def _emit(self, message: dict[str, Any]) -> None:
        """A line of stream-json; json output has its result only."""
        if self.lines:
            self._write(message)

    def _write(self, message: dict[str, Any]) -> None:
        self.out.write(json_line(message))
        self.out.flush()


# Characters that some line splitters (Python's str.splitlines, JavaScript before ES2019) take for
# a line break; escaped so that one message stays one line whatever the model wrote.
_LINE_BREAKS = {"\u2028": "\\u2028", "\u2029": "\\u2029", "\x85": "\\u0085"}


def json_line(message: dict[str, Any]) -> str:
    """One line of strict JSON in UTF-8: a lone surrogate (an undecodable file name) replaced,
    NaN and infinities (the model can write them in tool arguments) as null, Unicode line
    separators escaped."""
    text = json.dumps(_finite(message), ensure_ascii=False, default=str, allow_nan=False)
    for char, escaped in _LINE_BREAKS.items():
        text = text.replace(char, escaped)
    return text.encode("utf-8", "replace").decode("utf-8") + "\n"


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(item) for item in value]
    return value


def content_blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    """An OpenAI-style assistant message as Anthropic content blocks."""
    blocks: list[dict[str, Any]] = []
    if message.get("reasoning_content"):
        blocks.append({"type": "thinking", "thinking": str(message["reasoning_content"]), "signature": ""})
    if message.get("content"):
        blocks.append({"type": "text", "text": str(message["content"])})
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        blocks.append(
            {"type": "tool_use", "id": call.get("id", ""), "name": function.get("name", ""), "input": _input(function)}
        )
    return blocks


def _input(function: dict[str, Any]) -> dict[str, Any]:
    try:
        value = json.loads(function.get("arguments") or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def result_fields(
    summary: RunSummary,
    *,
    num_turns: int,
    duration_api_ms: int,
    usage: Usage,
    model: str | None,
    permission_denials: list[dict[str, Any]],
) -> dict[str, Any]:
    """Claude's result object for a run, ours under ``localagent``, the earlier fields after."""
    is_error = summary.status != "done"
    message: dict[str, Any] = {
        "type": "result",
        "subtype": SUBTYPES.get(summary.status, "error_during_execution"),
        "is_error": is_error,
        "duration_ms": round(summary.duration_s * 1000),
        "duration_api_ms": duration_api_ms,
        "num_turns": num_turns,
        "result": (summary.message or summary.final_text) if is_error else summary.final_text,
        "stop_reason": None if is_error else "end_turn",
        "session_id": summary.session_id,
        "total_cost_usd": 0,
        "usage": usage.to_dict(),
        "modelUsage": {} if not model else {model: _model_usage(usage)},
        "permission_denials": permission_denials,
        "uuid": _uuid(),
    }
    if is_error:
        message["errors"] = [summary.message or summary.status]
    ours = summary.to_dict()
    message["localagent"] = {
        key: ours[key]
        for key in (
            "status",
            "message",
            "tokens_per_second",
            "drafted",
            "accepted",
            "acceptance",
            "steps",
            "turns",
            "tool_calls",
            "files_changed",
        )
    } | {"prompt_cache_reuse": usage.cache_reuse}
    # The earlier result's fields, where scripts already read them.
    return message | {key: value for key, value in ours.items() if key not in message}


def _model_usage(usage: Usage) -> dict[str, Any]:
    return {
        "inputTokens": usage.input_tokens,
        "outputTokens": usage.output_tokens,
        "cacheReadInputTokens": usage.cache_read_input_tokens,
        "cacheCreationInputTokens": 0,
        "costUSD": 0,
    }


def failure_result(message: str, *, session_id: str | None = None, duration_s: float = 0.0) -> dict[str, Any]:
    """The result of a run that failed before the agent started (no server, a bad setting)."""
    summary = RunSummary(status="error", message=message, session_id=session_id, duration_s=duration_s)
    return result_fields(summary, num_turns=0, duration_api_ms=0, usage=Usage(), model=None, permission_denials=[])
