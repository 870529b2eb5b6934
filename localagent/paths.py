"""Where localagent keeps its files.

``LOCALAGENT_HOME`` puts config, data and state under one folder (handy for tests and for a
portable install); ``LOCALAGENT_CACHE_DIR`` moves the cache (built binaries, assembled models),
which is worth sharing between such homes.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import platformdirs

from server.dirs import ServerDirs

APP = "localagent"


@dataclass(frozen=True)
class AppPaths:
    config: Path
    data: Path
    state: Path
    cache: Path

    @property
    def user_config_file(self) -> Path:
        return self.config / "config.toml"

    @property
    def sessions(self) -> Path:
        return self.data / "sessions"

    @property
    def logs(self) -> Path:
        return self.state / "logs"

    def server_dirs(self) -> ServerDirs:
        return ServerDirs(
            builds=self.cache / "llama-server",
            work=self.cache / "build-work",
            models=self.data / "models",
            cache=self.cache,
            logs=self.logs,
            records=self.state / "servers",
        )


def app_paths() -> AppPaths:
    home = os.environ.get("LOCALAGENT_HOME")
    cache_override = os.environ.get("LOCALAGENT_CACHE_DIR")
    if home:
        root = Path(home).expanduser()
        paths = AppPaths(config=root / "config", data=root / "data", state=root / "state", cache=root / "cache")
    else:
        paths = AppPaths(
            config=Path(platformdirs.user_config_dir(APP)),
            data=Path(platformdirs.user_data_dir(APP)),
            state=Path(platformdirs.user_state_dir(APP)),
            cache=Path(platformdirs.user_cache_dir(APP)),
        )
    if cache_override:
        paths = AppPaths(paths.config, paths.data, paths.state, Path(cache_override).expanduser())
    return paths
