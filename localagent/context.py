"""What every command needs: paths, settings, profiles and the server manager, built once."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from localagent.config import Settings, load_settings, project_file
from localagent.paths import AppPaths, app_paths
from server.profile_loading import load_profiles
from server.profiles import Profile
from tools.mcp.approvals import ApprovalStore
from tools.mcp.setup import USER_FILE, McpSources

if TYPE_CHECKING:
    # The manager brings the HTTP client and the model hub: loaded when a command needs it.
    from server.manager import ServerManager

# One store for every workspace file a user approves (.mcp.json servers, .localagent.toml).
APPROVALS_FILE = "mcp-approvals.json"
_shown: set[str] = set()


def approval_store(paths: AppPaths) -> ApprovalStore:
    return ApprovalStore(paths.data / APPROVALS_FILE)


def _show_once(notices: list[str]) -> None:
    for notice in notices:
        if notice not in _shown:
            _shown.add(notice)
            sys.stderr.write(f"note: {notice}\n")


@dataclass
class AppContext:
    paths: AppPaths
    settings: Settings
    profiles: dict[str, Profile]
    workspace: Path
    # Workspace settings held back until approved, one line each; front ends show them once.
    notices: list[str] = field(default_factory=list)

    @classmethod
    def load(cls, workspace: Path | None = None) -> AppContext:
        paths = app_paths()
        workspace = (workspace or Path.cwd()).resolve()
        loaded = load_settings(paths.user_config_file, workspace, approval_store(paths))
        settings = loaded.settings
        origin = f"{paths.user_config_file} / {project_file(workspace)}"
        profiles = load_profiles(settings.profiles, origin=origin)
        _show_once(loaded.notices)
        return cls(paths=paths, settings=settings, profiles=profiles, workspace=workspace, notices=loaded.notices)

    def profile_name(self, given: str | None = None) -> str:
        """The profile a command means: the one given, else the configured one, else the default."""
        from server.defaults import DEFAULT_PROFILE

        return given or self.settings.server.profile or DEFAULT_PROFILE

    def server_manager(self, *, host: str | None = None, port: int | None = None) -> ServerManager:
        from server.manager import ServerManager

        server = self.settings.server
        return ServerManager(
            self.paths.server_dirs(),
            self.profiles,
            configured_binary=server.binary,
            host=host or server.host,
            port=port or server.port,
            startup_timeout=server.startup_timeout,
            api_key=server.api_key,
        )

    def mcp_sources(self) -> McpSources:
        """Where this workspace's MCP servers are configured, approved and logged."""
        return McpSources(
            user_file=self.paths.config / USER_FILE,
            workspace=self.workspace,
            approvals=approval_store(self.paths),
            logs_dir=self.paths.logs / "mcp",
        )
