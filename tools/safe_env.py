"""The environment handed to commands the model runs, without credentials."""

from __future__ import annotations

import os
from collections.abc import Mapping

SECRET_NAME_MARKERS = ("KEY", "SECRET", "TOKEN", "PASSWORD")


def looks_secret(name: str) -> bool:
    upper = name.upper()
    return any(marker in upper for marker in SECRET_NAME_MARKERS)


def filtered_environment(allowed: set[str], source: Mapping[str, str] | None = None) -> dict[str, str]:
    """Copy of the environment minus variables whose names look like secrets, unless allowed."""
    env = os.environ if source is None else source
    return {name: value for name, value in env.items() if name in allowed or not looks_secret(name)}
