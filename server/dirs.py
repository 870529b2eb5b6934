"""Where the server's files live: builds, models, caches, logs and the records of running servers.

A module of its own (no imports beyond the standard library) so that working out paths, which
every command does, does not load the HTTP client and the model hub with the manager.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ModelDirs:
    models: Path  # localagent's own folder, where older versions downloaded; still looked in first
    cache: Path  # assembled and generated files
    # Hugging Face downloads; None: the shared cache huggingface_hub uses (HF_HUB_CACHE, HF_HOME).
    hub_cache: Path | None = None


@dataclass(frozen=True)
class ServerDirs:
    builds: Path
    work: Path
    models: Path
    cache: Path
    logs: Path
    records: Path

    @property
    def model_dirs(self) -> ModelDirs:
        return ModelDirs(models=self.models, cache=self.cache)
