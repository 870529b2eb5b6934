"""What a built llama-server depends on from the machine it was built on, and what this one has.

A native build bakes this CPU's instruction sets into the binary. A binary copied to (or found in
a home directory shared with) a machine with fewer instruction sets dies with SIGILL, so cached
builds are keyed by, and only used on, CPUs with the same instruction-set flags.
"""

from __future__ import annotations

import hashlib
import os
import platform
import re
import shutil
import subprocess
from dataclasses import dataclass
from functools import cache
from pathlib import Path

# Flags in /proc/cpuinfo that name instruction sets a compiler may emit (x86). The rest of the
# line (virtualisation, power management, bugs) differs between identical CPUs in different
# hosts and would only cause needless rebuilds.
_X86_ISA = re.compile(
    r"^(sse\w*|ssse3|avx\w*|amx\w*|fma\w*|f16c|bmi\d|popcnt|lzcnt|abm|movbe|adx|aes|vaes|pclmulqdq"
    r"|vpclmulqdq|gfni|sha_ni|xsave\w*|rdrand|rdseed|cx16|mmx|xop|tbm|clflushopt|clwb|serialize"
    r"|movdir\w*|waitpkg|cldemote|enqcmd|hybrid_cpu)$"
)

# ggml's AMX kernels ask Linux for the tile-data permission once, from the thread that sets the
# backend up, but the compute threads execute the tile instructions; on kernels that check the
# permission per thread the first matrix multiply dies with SIGILL. A native build therefore
# leaves AMX out (everything else -march=native turns on stays); GCC and Clang honour an explicit
# -mno-* over -march=native whatever their order on the command line.
NO_AMX_FLAGS = ("-mno-amx-tile", "-mno-amx-int8", "-mno-amx-bf16")


@dataclass(frozen=True)
class CpuInfo:
    arch: str
    model: str
    isa_flags: tuple[str, ...]
    logical_cores: int
    physical_cores: int

    @property
    def fingerprint(self) -> str:
        """Short, stable: the architecture and instruction sets a native build depends on."""
        text = f"{self.arch}:{' '.join(self.isa_flags)}"
        return hashlib.sha256(text.encode()).hexdigest()[:12]


def parse_cpuinfo(text: str, arch: str) -> tuple[str, tuple[str, ...], int]:
    """(model name, instruction-set flags, physical cores) from /proc/cpuinfo's text."""
    model = ""
    flags: set[str] = set()
    cores: set[tuple[str, str]] = set()
    physical_id = core_id = ""
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key, value = key.strip(), value.strip()
        if key == "model name" and not model:
            model = value
        elif key in ("flags", "Features") and not flags:
            words = value.split()
            flags = {w for w in words if _X86_ISA.match(w)} if arch in ("x86_64", "i686", "AMD64") else set(words)
        elif key == "physical id":
            physical_id = value
        elif key == "core id":
            core_id = value
            cores.add((physical_id, core_id))
    return model, tuple(sorted(flags)), len(cores)


@cache
def cpu_info() -> CpuInfo:
    arch = platform.machine()
    logical = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    try:
        text = Path("/proc/cpuinfo").read_text(errors="replace")
    except OSError:
        text = ""
    model, flags, physical = parse_cpuinfo(text, arch)
    # A container's affinity mask can be smaller than the host's core count.
    physical = min(physical, logical) if physical else logical
    return CpuInfo(arch, model or platform.processor(), flags, logical, physical)


def machine_id() -> str:
    """This machine as opposed to another sharing the home directory: its id and its CPU."""
    for path in ("/etc/machine-id", "/var/lib/dbus/machine-id"):
        try:
            ident = Path(path).read_text().strip()
        except OSError:
            continue
        if ident:
            return f"{ident[:12]}-{cpu_info().fingerprint}"
    return f"{platform.node()}-{cpu_info().fingerprint}"


@cache
def compiler_accepts(flag: str, compiler: str = "c++") -> bool:
    """Whether this machine's compiler takes ``flag`` (old compilers know no AMX switches)."""
    exe = shutil.which(compiler)
    if exe is None:
        return False
    try:
        done = subprocess.run(
            [exe, flag, "-x", "c++", "-E", "-o", os.devnull, os.devnull],
            capture_output=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0
