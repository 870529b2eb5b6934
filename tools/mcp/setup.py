"""Which MCP servers a session starts: the configured ones, less a repository's own not yet approved.

Servers come from the user's file (``<config dir>/mcp.json``), the workspace's ``.mcp.json`` and
an extra file (``--mcp-config FILE``), later ones winning for a shared name. The workspace's
servers run commands the repository chose, so they start only once approved for this repository
(remembered by the ApprovalStore) or when the caller trusts it. The caller says where every file
lives: this layer knows no app paths.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from tools.mcp.approvals import ApprovalStore, AskApproval, approve_project_servers
from tools.mcp.config import LoadedConfig, ServerConfig, load_config_file, merge

if TYPE_CHECKING:
    # The manager brings in the `mcp` package; loaded only when servers are opened.
    from tools.mcp.manager import McpManager
    from tools.mcp.relay import Relay

PROJECT_FILE = ".mcp.json"
USER_FILE = "mcp.json"


@dataclass(frozen=True)
class McpSources:
    """Where MCP servers are configured, approved and logged."""

    user_file: Path  # <config dir>/mcp.json
    workspace: Path  # the repository; its .mcp.json is the project file
    approvals: ApprovalStore
    logs_dir: Path  # <logs dir>/mcp
    # Only the servers of the file given on the command line (Claude Code's --strict-mcp-config).
    strict: bool = False
    # How "type": "sdk" servers are reached (tools.mcp.relay); None: such servers cannot start.
    relay: Relay | None = None

    @property
    def project_file(self) -> Path:
        return self.workspace / PROJECT_FILE


@dataclass
class McpSetup:
    """What to start, what was held back for approval, and one-line notes for the person."""

    servers: list[ServerConfig] = field(default_factory=list)
    held_back: list[ServerConfig] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def load_configs(sources: McpSources, extra_config: Path | None) -> tuple[list[ServerConfig], LoadedConfig, list[str]]:
    """Every configured server, the project file as loaded, and one line per broken file or entry."""
    if sources.strict:
        user, project = LoadedConfig(), LoadedConfig()
    else:
        user = load_config_file(sources.user_file, "user")
        project = load_config_file(sources.project_file, "project")
    loads = [user, project]
    if extra_config is not None:
        loads.append(load_config_file(extra_config.expanduser().resolve(), "cli", required=True))
    notes = [f"MCP config {problem}" for loaded in loads for problem in loaded.problems]
    return merge(loads), project, notes


async def prepare_mcp(
    sources: McpSources, extra_config: Path | None, *, trust: bool = False, ask: AskApproval | None = None
) -> McpSetup:
    """The servers to start and those held back; asks `ask` (if given) about unapproved project servers."""
    servers, project, notes = load_configs(sources, extra_config)
    allowed, approval_notes = await approve_project_servers(
        servers,
        repo=sources.workspace,
        config_file=sources.project_file,
        raw_servers=project.raw_servers,
        store=sources.approvals,
        trust=trust,
        ask=ask,
    )
    held_back = [s for s in servers if s not in allowed]
    return McpSetup(allowed, held_back, notes + approval_notes)


async def open_mcp(
    sources: McpSources,
    extra_config: Path | None,
    *,
    trust: bool,
    ask: AskApproval | None,
    scratch_dir: Path,
) -> tuple[McpManager | None, list[str]]:
    """The started servers (None when none are configured) and notes; never raises for a bad server."""
    setup = await prepare_mcp(sources, extra_config, trust=trust, ask=ask)
    if not setup.servers:
        return None, setup.notes
    from tools.mcp.manager import McpManager

    manager = McpManager(setup.servers, sources.logs_dir, scratch_dir, cwd=sources.workspace, relay=sources.relay)
    await manager.start()
    return manager, setup.notes + manager.problems()
