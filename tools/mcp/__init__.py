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
from tools.mcp.setup import PROJECT_FILE, USER_FILE, McpSetup, McpSources, load_configs, open_mcp, prepare_mcp
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
    "McpSetup",
    "McpSources",
    "McpTool",
    "PROJECT_FILE",
    "ServerConfig",
    "ServerConnection",
    "ServerState",
    "StateName",
    "USER_FILE",
    "approve_project_servers",
    "fingerprint",
    "load_config_file",
    "load_configs",
    "merge",
    "open_mcp",
    "prepare_mcp",
    "tool_name",
    "unique_tool_names",
]
