"""Find the llama-server binary to use."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from server.errors import BinaryError, NothingBuiltError
from server.smoke import SmokeRecords
from tools.program_path import which_absolute

BINARY_ENV = "LOCALAGENT_LLAMA_SERVER"


@dataclass(frozen=True)
class FoundBinary:
    path: Path
    origin: str  # "config", "env LOCALAGENT_LLAMA_SERVER", "cached build", "PATH"


def find_binary(configured: Path | None, builds_dir: Path) -> FoundBinary:
    """Discovery order: config ``server.binary``, env, the newest cached build, PATH."""
    if configured is not None:
        return FoundBinary(_must_be_executable(configured.expanduser(), "config server.binary"), "config")
    from_env = os.environ.get(BINARY_ENV)
    if from_env:
        return FoundBinary(_must_be_executable(Path(from_env).expanduser(), BINARY_ENV), f"env {BINARY_ENV}")
    cached = newest_cached_build(builds_dir)
    if cached is not None:
        return FoundBinary(cached, "cached build")
    on_path = which_absolute("llama-server")
    if on_path:
        return FoundBinary(Path(on_path), "PATH")
    if any(builds_dir.glob("*/llama-server")):
        raise NothingBuiltError(
            "the cached llama-server builds have not passed their smoke test on this machine (built "
            "for another CPU, or before smoke tests); run `localagent server build`"
        )
    raise NothingBuiltError("no llama-server found; run `localagent server build` (or set server.binary)")


def newest_cached_build(builds_dir: Path) -> Path | None:
    """The newest cached build that passed its smoke test on this machine: a home directory shared
    with another machine may hold builds that would die here."""
    records = SmokeRecords(builds_dir / ".smoke")
    candidates = [p for p in builds_dir.glob("*/llama-server") if os.access(p, os.X_OK) and records.passed(p)]
    if not candidates:
        return None
    return max(candidates, key=lambda p: p.stat().st_mtime)


def _must_be_executable(path: Path, origin: str) -> Path:
    if not path.is_file():
        raise BinaryError(f"{origin} points at {path}, which does not exist; fix it or unset it")
    if not os.access(path, os.X_OK):
        raise BinaryError(f"{origin} points at {path}, which is not executable; chmod +x it")
    return path
