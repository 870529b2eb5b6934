"""The names MCP tools have for the model: `mcp__<server>__<tool>`, as Claude Code writes them.

OpenAI-style function names allow only `[A-Za-z0-9_-]` and at most 64 characters, so anything
else becomes `_` and long names are cut, with a short hash keeping cut names distinct.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

MAX_NAME_LENGTH = 64
PREFIX = "mcp__"
_INVALID = re.compile(r"[^A-Za-z0-9_-]")
_HASH_LENGTH = 8


def sanitise(part: str) -> str:
    return _INVALID.sub("_", part)


def tool_name(server: str, tool: str) -> str:
    full = f"{PREFIX}{sanitise(server)}__{sanitise(tool)}"
    if len(full) <= MAX_NAME_LENGTH:
        return full
    return _with_hash(full, f"{server}\0{tool}")


def unique_tool_names(pairs: Iterable[tuple[str, str]]) -> list[str]:
    """Names for (server, tool) pairs in order; a name already taken gets a hash suffix."""
    taken: set[str] = set()
    names: list[str] = []
    for server, tool in pairs:
        name = tool_name(server, tool)
        if name in taken:
            name = _with_hash(name, f"{server}\0{tool}")
        taken.add(name)
        names.append(name)
    return names


def _with_hash(name: str, key: str) -> str:
    digest = hashlib.sha256(key.encode()).hexdigest()[:_HASH_LENGTH]
    return f"{name[: MAX_NAME_LENGTH - _HASH_LENGTH - 1]}_{digest}"
