"""Threads for CPU serving, chosen from the machine when the server starts.

ggml's thread pool synchronises its threads many times per token. With the cores to itself,
one thread per physical core is fastest; with other busy processes on those cores, a thread that
is preempted mid-token stalls the others, and generation collapses (2 cores, 2 busy neighbours:
10.6 tok/s with 2 threads, 15.3 with 1; idle: 41.0 and 25.4). So a CPU profile with
``threads = "auto"`` takes one thread per physical core that is not busy at start, at least one.
Waiting (``--poll``) stays at llama.cpp's default: measured, polling less only lost speed.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from pathlib import Path

from server.cpu import CpuInfo


@dataclass(frozen=True)
class ThreadChoice:
    threads: int
    busy: int
    cores: int

    @property
    def note(self) -> str:
        return (
            f"threads: {self.threads} ({self.cores} physical core{'s' if self.cores != 1 else ''}, "
            f"{self.busy} busy with other processes at start)"
        )


def running_tasks(stat_text: str) -> int | None:
    for line in stat_text.splitlines():
        if line.startswith("procs_running"):
            try:
                return int(line.split()[1])
            except (IndexError, ValueError):
                return None
    return None


def busy_cores(samples: int = 5, interval_s: float = 0.04) -> int:
    """Runnable tasks other than this one, the median of a few looks at /proc/stat (one look
    catches bursts; the load average lags by a minute)."""
    counts = []
    for index in range(samples):
        try:
            count = running_tasks(Path("/proc/stat").read_text())
        except OSError:
            count = None
        if count is not None:
            counts.append(max(count - 1, 0))  # this process is running while it reads
        if index + 1 < samples:
            time.sleep(interval_s)
    return int(statistics.median(counts)) if counts else 0


def choose_threads(cpu: CpuInfo, busy: int) -> ThreadChoice:
    cores = max(cpu.physical_cores, 1)
    return ThreadChoice(threads=max(1, cores - busy), busy=busy, cores=cores)
