"""nvidia-smi, asked one question: its output, or why there is none (no driver, no GPU, a hang)."""

from __future__ import annotations

import subprocess
from collections.abc import Callable

Runner = Callable[..., subprocess.CompletedProcess[str]]


class NvidiaSmiError(Exception):
    """nvidia-smi could not answer; the message says why, for the caller to put in its own words."""


def nvidia_smi(*args: str, run: Runner | None = None) -> str:
    try:
        return (run or subprocess.run)(
            ["nvidia-smi", *args], capture_output=True, text=True, timeout=30, check=True, stdin=subprocess.DEVNULL
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
