"""The tools as the agent sees them, and the calls the model makes to them: read from its
reply (native or printed as text), checked against the tool's schema, and written back into
the history as the assistant's message and the tools' results."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Protocol

from json_repair import repair_json

from agent.completion import StepResult, StreamedToolCall
from agent.control_tokens import restored
from agent.toolcalls.text import parse_text_tool_calls
from tools.base import ToolContext, ToolResult
from tools.schema_validation import validate_arguments

__all__ = ["AgentTool", "ToolCall", "assistant_message", "calls_in_reply", "tool_message"]


class AgentTool(Protocol):
    """A built-in tool (tools.base.Tool) or an MCP server's (tools.mcp.tool_adapter.McpTool)."""

    name: str
    description: str
    parameters: dict[str, Any]
    reads_only: bool

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult: ...

    def describe_call(self, args: dict[str, Any], workspace: Any = None) -> str: ...

    def preview(self, args: dict[str, Any], ctx: ToolContext) -> str | None:
        """What the call would change (a unified diff) for the approval prompt; must not raise."""
        ...


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    # None when the model's arguments were not a JSON object.
    arguments: dict[str, Any] | None
    # Why the call cannot run as written (malformed, unknown tool, arguments off the schema).
    problem: str | None = None


def calls_in_reply(reply: StepResult, tools: Mapping[str, AgentTool], turn: int) -> tuple[list[ToolCall], str]:
    """The calls in the model's reply, each checked, and the reply's text without printed calls.

    `turn` numbers the ids of calls printed as text, which have none of their own.
    """
    if reply.tool_calls:
        calls = [_native_call(c, tools) for c in reply.tool_calls]
        return [_checked(c, tools) for c in calls], reply.text
    parsed = parse_text_tool_calls(reply.text, set(tools), {n: t.parameters for n, t in tools.items()})
    calls = [
        ToolCall(id=f"call_text_{turn}_{i}", name=c.name, arguments=c.arguments) for i, c in enumerate(parsed.calls)
    ]
    if parsed.errors and not calls:
        # Something call-shaped that we could not use: tell the model how to call.
        calls = [ToolCall(id=f"call_text_{turn}_err", name="invalid", arguments=None, problem=parsed.errors[0])]
    return [_checked(c, tools) for c in calls], parsed.text_without_calls if calls else reply.text


def _native_call(call: StreamedToolCall, tools: Mapping[str, AgentTool]) -> ToolCall:
    if call.name not in tools:
        return ToolCall(call.id, call.name, None, f"there is no tool named {call.name!r}")
    text = call.arguments_text.strip() or "{}"
    try:
        arguments = json.loads(text)
    except ValueError:
        repaired = repair_json(text, return_objects=True)
        arguments = repaired if isinstance(repaired, dict) and repaired else None
    if not isinstance(arguments, dict):
        return ToolCall(call.id, call.name, None, f"the arguments of {call.name} are not a JSON object")
    return ToolCall(call.id, call.name, arguments)


def _checked(call: ToolCall, tools: Mapping[str, AgentTool]) -> ToolCall:
    """The call with the problem its arguments have against the tool's schema, if any."""
    tool = tools.get(call.name)
    if call.problem is not None or tool is None or call.arguments is None:
        return call
    # What the model copied from a defanged tool result means the text it came from.
    call = replace(call, arguments=restored(call.arguments))
    problem = validate_arguments(tool.name, tool.parameters, call.arguments)
    return call if problem is None else replace(call, problem=problem)


def assistant_message(text: str, calls: list[ToolCall], reasoning: str) -> dict[str, Any]:
    """The model's reply as it goes into the history (and so into every later request)."""
    message: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        message["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": _arguments_text(c)}}
            for c in calls
        ]
    if reasoning:
        message["reasoning_content"] = reasoning
    return message


def tool_message(call: ToolCall, result: ToolResult) -> dict[str, Any]:
    content = result.output
    if result.is_error and not content.startswith("Error"):
        content = f"Error: {content}"
    return {"role": "tool", "tool_call_id": call.id, "content": content}


def _arguments_text(call: ToolCall) -> str:
    return json.dumps(call.arguments if call.arguments is not None else {}, ensure_ascii=False)
