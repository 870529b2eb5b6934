"""Finding a test's processes from outside whatever PID namespace the sandbox gave them: by a
unique number in their command line, since `$!` inside names a PID only the command knows."""

from __future__ import annotations

import asyncio
import os
import secrets
import time
from pathlib import Path


def unique_seconds() -> str:
    """A sleep length no other process has: its command line finds the process from outside,
    whatever PID namespace the sandbox gave it (where `$!` names a PID only the command knows)."""
    return f"{1000 + secrets.randbelow(10**6)}.{secrets.randbelow(10**6)}"


def host_pids(marker: str) -> list[int]:
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if marker.encode() in cmdline.read_bytes() and process_alive(int(cmdline.parent.name)):
                found.append(int(cmdline.parent.name))
        except (OSError, ValueError):
            continue
    return found


def wait_until_gone(marker: str, seconds: float = 3.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not host_pids(marker):
            return True
        time.sleep(0.05)
    return not host_pids(marker)


def process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A killed child whose parent is gone may linger as a zombie until reaped; it is dead.
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


async def gone(marker: str, seconds: float = 5.0) -> bool:
    """`wait_until_gone` for a test that must leave its event loop running."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not host_pids(marker):
            return True
        await asyncio.sleep(0.05)
    return not host_pids(marker)
