"""An MCP server's tool as the agent sees it: name, description, schema, `run`, `describe_call`, `preview`."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from mcp_types import Tool as RemoteTool

from tools.base import ToolContext, ToolResult, arguments_problem
from tools.mcp.client import McpCallError, ServerConnection
from tools.mcp.results import to_tool_result

MAX_DESCRIPTION_CHARS = 4000
MAX_SUMMARY_CHARS = 300


class McpTool:
    # What an MCP tool does is the server's business, whatever it claims: every call goes
    # through the permission policy, so rules such as `mcp__git__*` decide.
    reads_only = False

    def __init__(self, connection: ServerConnection, remote: RemoteTool, name: str, scratch_dir: Path) -> None:
        self.connection = connection
        self.server_name = connection.name
        self.remote_name = remote.name
        self.name = name
        self.description = _description(remote, connection.name)
        self.parameters = _parameters(remote.input_schema)
        self.scratch_dir = scratch_dir

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        """Check the arguments as every tool does, then call the server; a refusal never leaves here.

        The agent loop checks the schema too, but not the values JSON allows and the transport
        cannot send (an unpaired surrogate breaks the connection), and not every caller is the loop.
        """
        problem = arguments_problem(self.name, self.parameters, args)
        if problem is not None:
            return ToolResult.error(problem, mcp_server=self.server_name, mcp_tool=self.remote_name)
        try:
            result = await self.connection.call(self.remote_name, args)
        except McpCallError as exc:
            return ToolResult.error(str(exc), mcp_server=self.server_name, mcp_tool=self.remote_name)
        return to_tool_result(result, server=self.server_name, tool=self.remote_name, scratch_dir=self.scratch_dir)

    def preview(self, args: dict[str, Any], ctx: ToolContext) -> str | None:
        """Nothing to preview: what a remote tool would change is not known before it runs."""
        return None

    def describe_call(self, args: dict[str, Any], workspace: Any = None) -> str:
        """The arguments as compact JSON: what approval prompts show and `mcp__x__y(...)` rules match."""
        try:
            text = json.dumps(args, ensure_ascii=False, sort_keys=True, separators=(",", ":"), default=str)
        except (TypeError, ValueError):
            text = str(args)
        return text if len(text) <= MAX_SUMMARY_CHARS else text[: MAX_SUMMARY_CHARS - 3] + "..."


def _description(remote: RemoteTool, server: str) -> str:
    text = (remote.description or "").strip() or (remote.title or "").strip()
    if not text:
        text = f"The {remote.name} tool of the MCP server {server}."
    if len(text) > MAX_DESCRIPTION_CHARS:
        text = text[: MAX_DESCRIPTION_CHARS - 3] + "..."
    return text


def _parameters(schema: dict[str, Any] | None) -> dict[str, Any]:
    result = copy.deepcopy(schema) if isinstance(schema, dict) else {}
    # Chat templates and the argument validator both expect an object schema with properties.
    result.setdefault("type", "object")
    if result.get("type") == "object":
        result.setdefault("properties", {})
    return result
