"""Built-in tools of the agent: shell, file viewing and editing, and search.

A standalone layer: it must not import agent, tui, server or localagent.
"""

from tools.base import ToolContext, Tool, ToolError, ToolResult
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
