"""Busy neighbours for ``bench --load N``: N CPU-bound processes running beside the server while
the measured requests run, so a benchmark shows how serving degrades on shared cores.

Each neighbour dies with this process (PDEATHSIG) and is killed when the block ends, so none is
ever left behind, even when the benchmark is interrupted.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator

from server.process import die_with_parent

# A pure-Python spin: one core's worth of work, no memory, no I/O.
_SPIN = "while True:\n    pass\n"


@contextlib.asynccontextmanager
async def busy_neighbours(count: int) -> AsyncIterator[list[int]]:
    """Run ``count`` spinning processes for the duration of the block; yields their pids."""
    procs: list[asyncio.subprocess.Process] = []
    try:
        for _ in range(count):
            procs.append(
                await asyncio.create_subprocess_exec(
                    sys.executable,
                    "-c",
                    _SPIN,
                    stdin=asyncio.subprocess.DEVNULL,
                    stdout=asyncio.subprocess.DEVNULL,
                    stderr=asyncio.subprocess.DEVNULL,
                    preexec_fn=die_with_parent,
                )
            )
        yield [proc.pid for proc in procs]
    finally:
        for proc in procs:
            if proc.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
        for proc in procs:
            await proc.wait()
