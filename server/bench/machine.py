"""A few lines about the machine, so a number in a report can be told apart from another machine's."""

from __future__ import annotations

import os
import platform

from server.bench.results import MachineInfo
from server.cpu import cpu_info
from server.nvidia_smi import gpu_rows


def machine_info() -> MachineInfo:
    return MachineInfo(
        platform=platform.platform(),
        machine=platform.machine(),
        python=platform.python_version(),
        cpu_count=os.cpu_count(),
        cpus_usable=cpu_info().logical_cores,
        cpu_model=cpu_info().model or None,
        memory_gb=_memory_gb(),
        gpus=_gpus(),
    )


def _memory_gb() -> float | None:
    try:
        return round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    except (ValueError, OSError, AttributeError):
        return None


def _gpus() -> list[str]:
    return gpu_rows("name,memory.total")
