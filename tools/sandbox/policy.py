"""What a command may touch (the policy) and how one command is started under it (its confinement)."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

SandboxMode = Literal["read-only", "workspace-write", "off"]
Isolation = Literal["bubblewrap", "landlock", "pid-namespace", "none"]
SANDBOX_MODES: tuple[SandboxMode, ...] = ("read-only", "workspace-write", "off")


@dataclass(frozen=True)
class SandboxPolicy:
    """What a command may touch. `writable` adds roots to workspace-write (e.g. a build cache);
    `hidden` names folders a command must not even read (localagent's own data, with the saved
    sessions), replaced by empty ones where the layer can do that (bubblewrap)."""

    mode: SandboxMode = "workspace-write"
    network: bool = False
    writable: tuple[Path, ...] = ()
    hidden: tuple[Path, ...] = ()

    def __post_init__(self) -> None:
        if self.mode not in SANDBOX_MODES:
            raise ValueError(f"unknown sandbox mode {self.mode!r} (use {', '.join(SANDBOX_MODES)})")
        object.__setattr__(self, "writable", tuple(Path(p) for p in self.writable))
        object.__setattr__(self, "hidden", tuple(Path(p) for p in self.hidden))


@dataclass
class Confinement:
    """How to start one command: argv prefix, a preexec_fn, and what is in force."""

    policy: SandboxPolicy
    isolation: Isolation
    sandboxed: bool  # the policy's filesystem rules are enforced
    network_blocked: bool
    prefix: tuple[str, ...] = ()
    preexec_fn: Callable[[], None] | None = None
    pass_fds: tuple[int, ...] = ()
    _ruleset_fd: int | None = field(default=None, repr=False)

    def argv(self, command: Sequence[str]) -> list[str]:
        return [*self.prefix, *command]

    def close(self) -> None:
        """Close the parent's ruleset fd (and the seccomp program's); call once the child started."""
        if self._ruleset_fd is not None:
            os.close(self._ruleset_fd)
            self._ruleset_fd = None
        for fd in self.pass_fds:
            os.close(fd)
        self.pass_fds = ()

    def metadata(self) -> dict[str, object]:
        return {
            "sandboxed": self.sandboxed,
            "sandbox_mode": self.policy.mode,
            "network_blocked": self.network_blocked,
            "process_isolation": self.isolation,
        }
