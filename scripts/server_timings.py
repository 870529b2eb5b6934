"""Measure the server manager: cold start to ready, and restart after SIGKILL, for a profile.

    python scripts/server_timings.py [PROFILE] [--repeat N]

Prints the numbers; asserts nothing (these machines are noisy).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import statistics
import time

from localagent.context import AppContext
from server.supervisor import ServerState


async def measure(profile: str) -> tuple[float, float]:
    manager = AppContext.load().server_manager()
    started = time.monotonic()
    handle = await manager.start_in_process(profile, port="auto")
    cold = time.monotonic() - started
    supervisor = handle.supervisor
    assert supervisor is not None
    try:
        killed_at = time.monotonic()
        os.kill(supervisor.status.pid, signal.SIGKILL)
        while supervisor.status.state == ServerState.READY:
            await asyncio.sleep(0.01)
        await supervisor.wait_ready(120)
        restart = time.monotonic() - killed_at
    finally:
        await handle.close()
    return cold, restart


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("profile", nargs="?", default="tiny")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    colds, restarts = [], []
    for _ in range(args.repeat):
        cold, restart = asyncio.run(measure(args.profile))
        colds.append(cold)
        restarts.append(restart)
        print(f"cold start to ready {cold:.2f} s, restart after SIGKILL {restart:.2f} s")
    print(
        f"{args.profile}: cold start median {statistics.median(colds):.2f} s, "
        f"restart median {statistics.median(restarts):.2f} s (includes the supervisor's 0.5 s first backoff)"
    )


if __name__ == "__main__":
    main()
