"""nvidia-smi, asked one question: its output, or why there is none (no driver, no GPU, a hang)."""

from __future__ import annotations

import subprocess
from collections.abc import Callable

from tools.program_path import which_absolute

Runner = Callable[..., subprocess.CompletedProcess[str]]


class NvidiaSmiError(Exception):
    """nvidia-smi could not answer; the message says why, for the caller to put in its own words."""


def nvidia_smi(*args: str, run: Runner | None = None) -> str:
    # Looked up on PATH's absolute entries only: it runs on every server start, often inside a
    # stranger's repository, which may hold a program of that name (tools.program_path).
    program = "nvidia-smi" if run is not None else which_absolute("nvidia-smi")
    if program is None:
        raise NvidiaSmiError("nvidia-smi is not on PATH")
    try:
        return (run or subprocess.run)(
            [program, *args], capture_output=True, text=True, timeout=30, check=True, stdin=subprocess.DEVNULL
        ).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        raise NvidiaSmiError(str(exc)) from None


def gpu_rows(fields: str, run: Runner | None = None) -> list[str]:
    """One line per GPU with the query's ``fields`` (e.g. "name,memory.total"); none without a
    driver or a GPU."""
    try:
        text = nvidia_smi(f"--query-gpu={fields}", "--format=csv,noheader", run=run)
    except NvidiaSmiError:
        return []
    return [line.strip() for line in text.splitlines() if line.strip()]
