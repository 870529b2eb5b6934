"""The set of built-in tools and their OpenAI function-calling declarations."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from tools.base import Tool
from tools.bash_tool import BashTool
from tools.create_tool import CreateTool
from tools.edit_tool import EditTool
from tools.glob_tool import GlobTool
from tools.grep_tool import GrepTool
from tools.insert_tool import InsertTool
from tools.schema_inline import declared_schema
from tools.view_tool import ViewTool


class DeclaredTool(Protocol):
    """What the model is told about a tool: a built-in Tool or an MCP server's tool."""

    name: str
    description: str
    parameters: dict[str, Any]


def builtin_tools() -> list[Tool]:
    """Fresh instances in a fixed order; the order is part of the prompt the server caches."""
    return [BashTool(), ViewTool(), CreateTool(), EditTool(), InsertTool(), GrepTool(), GlobTool()]


def tools_by_name(tools: Sequence[Tool]) -> dict[str, Tool]:
    return {tool.name: tool for tool in tools}


def openai_tool_specs(tools: Sequence[DeclaredTool] | None = None) -> list[dict[str, Any]]:
    """The `tools=[...]` list for chat completions, identical byte for byte on every call.

    Order follows `tools` and every dict is rebuilt with fixed key order, because the
    server's prompt cache only hits when the serialised tool block does not change.
    """
    chosen = builtin_tools() if tools is None else tools
    return [
        {
            "type": "function",
            "function": {
                "name": tool.name,
                "description": tool.description,
                # A new dict (callers that tweak the spec cannot alter the tool's own schema), in
                # the plain form templates render: references inlined, optional types folded.
                "parameters": declared_schema(tool.parameters),
            },
        }
        for tool in chosen
    ]
