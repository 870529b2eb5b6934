"""MCP servers as agent tools: configuration, one owning task per server, results for the model.

Part of the standalone tools layer: it must not import agent, tui or localagent.
"""

from tools.mcp.approvals import ApprovalRequest, ApprovalStore, AskApproval, approve_project_servers, fingerprint
from tools.mcp.client import McpCallError, ServerConnection, StateName
from tools.mcp.config import (
    DEFAULT_CALL_TIMEOUT,
    DEFAULT_STARTUP_TIMEOUT,
    ConfigProblem,
    LoadedConfig,
    ServerConfig,
    load_config_file,
    merge,
)
from tools.mcp.manager import McpManager, ServerState
from tools.mcp.names import tool_name, unique_tool_names
from tools.mcp.tool_adapter import McpTool

__all__ = [
    "ApprovalRequest",
    "ApprovalStore",
    "AskApproval",
    "ConfigProblem",
    "DEFAULT_CALL_TIMEOUT",
    "DEFAULT_STARTUP_TIMEOUT",
    "LoadedConfig",
    "McpCallError",
    "McpManager",
    "McpTool",
    "ServerConfig",
    "ServerConnection",
    "ServerState",
    "StateName",
    "approve_project_servers",
    "fingerprint",
    "load_config_file",
    "merge",
    "tool_name",
    "unique_tool_names",
]
