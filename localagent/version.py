"""The installed package's version, for ``--version`` and for what localagent tells its clients."""

from __future__ import annotations

from importlib import metadata

DISTRIBUTION = "localagent-dflash"


def package_version() -> str:
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return "unknown (not installed as a package)"
