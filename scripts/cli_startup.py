"""Start-up time of the quick CLI commands: median wall time of 10 runs each.

    python scripts/cli_startup.py [--runs 10]

`localagent --version`, `--help` and `server status` (in an empty LOCALAGENT_HOME, so no
server is found): what a person waits for, and what every test that runs the CLI pays.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import time

COMMANDS = (["--version"], ["--help"], ["server", "status"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    program = shutil.which("localagent") or "localagent"
    with tempfile.TemporaryDirectory() as home:
        env = dict(os.environ, LOCALAGENT_HOME=home)
        for command in COMMANDS:
            times = []
            for _ in range(args.runs):
                started = time.perf_counter()
                subprocess.run([program, *command], capture_output=True, env=env, check=False)
                times.append(time.perf_counter() - started)
            print(
                f"localagent {' '.join(command):<15} median {statistics.median(times):.3f} s "
                f"(min {min(times):.3f}, max {max(times):.3f}, {args.runs} runs)"
            )


if __name__ == "__main__":
    main()
