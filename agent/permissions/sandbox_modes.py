"""Which OS sandbox bash runs under in each permission mode (as Codex's sandbox modes do).

read-only may read but not write; ask and auto-edit write only in the workspace and the temp
directories; full-auto too, unless the user turns the sandbox off. Network access is off unless
the user's own configuration allows it.
"""

from __future__ import annotations

from pathlib import Path

from agent.permissions.rules import PermissionMode
from tools.sandbox import SandboxPolicy


def sandbox_for(
    mode: str, requested: str | None = None, *, network: bool = False, hidden: tuple[Path, ...] = ()
) -> SandboxPolicy:
    """`hidden`: the agent's own folders (sessions, config, logs), out of a command's sight."""
    if mode == PermissionMode.READ_ONLY:
        return SandboxPolicy(mode="read-only", network=network, hidden=hidden)
    if mode == PermissionMode.FULL_AUTO and requested == "off":
        return SandboxPolicy(mode="off", network=True, hidden=hidden)
    return SandboxPolicy(mode="workspace-write", network=network, hidden=hidden)
