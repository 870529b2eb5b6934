"""MCP servers as agent tools: configuration, one owning task per server, results for the model.

Part of the standalone tools layer: it must not import agent, tui or localagent.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tools.lazy_exports import lazy_exports

if TYPE_CHECKING:
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

_EXPORTS = {
    "ApprovalRequest": "tools.mcp.approvals",
    "ApprovalStore": "tools.mcp.approvals",
    "AskApproval": "tools.mcp.approvals",
    "approve_project_servers": "tools.mcp.approvals",
    "fingerprint": "tools.mcp.approvals",
    "McpCallError": "tools.mcp.client",
    "ServerConnection": "tools.mcp.client",
    "StateName": "tools.mcp.client",
    "DEFAULT_CALL_TIMEOUT": "tools.mcp.config",
    "DEFAULT_STARTUP_TIMEOUT": "tools.mcp.config",
    "ConfigProblem": "tools.mcp.config",
    "LoadedConfig": "tools.mcp.config",
    "ServerConfig": "tools.mcp.config",
    "load_config_file": "tools.mcp.config",
    "merge": "tools.mcp.config",
    "McpManager": "tools.mcp.manager",
    "ServerState": "tools.mcp.manager",
    "tool_name": "tools.mcp.names",
    "unique_tool_names": "tools.mcp.names",
    "PROJECT_FILE": "tools.mcp.setup",
    "USER_FILE": "tools.mcp.setup",
    "McpSetup": "tools.mcp.setup",
    "McpSources": "tools.mcp.setup",
    "load_configs": "tools.mcp.setup",
    "open_mcp": "tools.mcp.setup",
    "prepare_mcp": "tools.mcp.setup",
    "McpTool": "tools.mcp.tool_adapter",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

__all__ = [
    "DEFAULT_CALL_TIMEOUT",
    "DEFAULT_STARTUP_TIMEOUT",
    "PROJECT_FILE",
    "USER_FILE",
    "ApprovalRequest",
    "ApprovalStore",
    "AskApproval",
    "ConfigProblem",
    "LoadedConfig",
    "McpCallError",
    "McpManager",
    "McpSetup",
    "McpSources",
    "McpTool",
    "ServerConfig",
    "ServerConnection",
    "ServerState",
    "StateName",
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
