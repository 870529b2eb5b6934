"""Per-command cost of each bash sandbox layer on this machine: median wall time of `true`.

    python scripts/sandbox_cost.py [--runs 30]

Prints one line per layer (bubblewrap where it works, Landlock + seccomp, sandbox off) in
milliseconds, so a change to the sandbox can be weighed against what it costs every command.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from tools import BashTool, ToolContext, sandbox
from tools.sandbox import SandboxPolicy


async def _median_ms(ctx: ToolContext, runs: int) -> float:
    tool = BashTool()
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        await tool.run({"command": "true"}, ctx)
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as name:
        root = Path(name)
        (root / "ws").mkdir()
        ctx = ToolContext(workspace=root / "ws", scratch_dir=root / "scratch")
        layers = []
        if sandbox.bubblewrap_status()[0] is not None:
            layers.append(("bubblewrap", SandboxPolicy()))
        layers += [("landlock", SandboxPolicy()), ("off", SandboxPolicy(mode="off"))]
        for name_, policy in layers:
            if name_ == "landlock":
                sandbox.bubblewrap_status = lambda: (None, "measured without it")  # type: ignore[assignment]  # measured without bubblewrap
            ctx.sandbox = policy
            print(f"{name_:<11} {asyncio.run(_median_ms(ctx, args.runs)):6.1f} ms per command (median of {args.runs})")


if __name__ == "__main__":
    main()
