"""Built-in tools of the agent: shell, file viewing and editing, and search.

A standalone layer: it must not import agent, tui, server or localagent.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tools.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from tools.base import Tool, ToolContext, ToolError, ToolResult
    from tools.bash_tool import BashTool
    from tools.create_tool import CreateTool
    from tools.edit_tool import EditTool
    from tools.glob_tool import GlobTool
    from tools.grep_tool import GrepTool
    from tools.insert_tool import InsertTool
    from tools.registry import builtin_tools, openai_tool_specs, tools_by_name
    from tools.schema_validation import validate_args, validate_arguments
    from tools.view_tool import ViewTool
    from tools.workspace_paths import resolve_in_workspace

_EXPORTS = {
    "ToolContext": "tools.base",
    "Tool": "tools.base",
    "ToolError": "tools.base",
    "ToolResult": "tools.base",
    "BashTool": "tools.bash_tool",
    "CreateTool": "tools.create_tool",
    "EditTool": "tools.edit_tool",
    "GlobTool": "tools.glob_tool",
    "GrepTool": "tools.grep_tool",
    "InsertTool": "tools.insert_tool",
    "builtin_tools": "tools.registry",
    "openai_tool_specs": "tools.registry",
    "tools_by_name": "tools.registry",
    "validate_args": "tools.schema_validation",
    "validate_arguments": "tools.schema_validation",
    "ViewTool": "tools.view_tool",
    "resolve_in_workspace": "tools.workspace_paths",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

__all__ = [
    "BashTool",
    "CreateTool",
    "EditTool",
    "GlobTool",
    "GrepTool",
    "InsertTool",
    "Tool",
    "ToolContext",
    "ToolError",
    "ToolResult",
    "ViewTool",
    "builtin_tools",
    "openai_tool_specs",
    "resolve_in_workspace",
    "tools_by_name",
    "validate_args",
    "validate_arguments",
]
