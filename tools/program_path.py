"""Finding a program on PATH without finding one in the current directory."""

from __future__ import annotations

import os
import shutil


def which_absolute(name: str) -> str | None:
    """``shutil.which`` over PATH's absolute entries only: an empty or relative entry means the
    current directory, which may be a stranger's repository holding a program of that name."""
    absolute = [entry for entry in os.environ.get("PATH", "").split(os.pathsep) if os.path.isabs(entry)]
    return shutil.which(name, path=os.pathsep.join(absolute)) if absolute else None
