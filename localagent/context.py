"""What every command needs: paths, settings, profiles and the server manager, built once."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from localagent.config import Settings, load_settings, project_file
from localagent.paths import AppPaths, app_paths
from server.manager import ServerManager
from server.profiles import Profile, load_profiles


@dataclass
class AppContext:
    paths: AppPaths
    settings: Settings
    profiles: dict[str, Profile]
    workspace: Path

    @classmethod
    def load(cls, workspace: Path | None = None) -> AppContext:
        paths = app_paths()
        workspace = (workspace or Path.cwd()).resolve()
        settings = load_settings(paths.user_config_file, workspace)
        origin = f"{paths.user_config_file} / {project_file(workspace)}"
        profiles = load_profiles(settings.profiles, origin=origin)
        return cls(paths=paths, settings=settings, profiles=profiles, workspace=workspace)

    def server_manager(self, *, host: str | None = None, port: int | None = None) -> ServerManager:
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
