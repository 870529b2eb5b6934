"""The CUDA toolkit a ``--cuda`` build compiles with.

A system toolkit (``CUDA_HOME`` / ``CUDA_PATH``, ``nvcc`` on PATH, ``/usr/local/cuda``) is
preferred. A machine with only the NVIDIA driver, the usual gaming PC, gets NVIDIA's toolkit
wheels from PyPI instead, unpacked into localagent's cache (never into the user's Python). The
wheels hold a complete ``nvcc`` but are not laid out as a system toolkit, and CMake's
``FindCUDAToolkit`` needs two things they lack, so ``complete_layout`` adds them in the cache (``server.cuda_layout``):

- unversioned library names (``libcudart.so``): ``find_library`` looks for ``lib<name>.so`` and
  the wheels ship only ``libcudart.so.13``, so without them CUDAToolkit is "not found";
- ``lib/stubs/libcuda.so``: ggml links the driver library for its virtual-memory pool
  (``CUDA::cuda_driver``), and that imported target exists only when CMake finds a ``cuda``
  library, which on a machine without a toolkit is the stub NVIDIA ships in ``lib/stubs``.
  The stub is generated from the toolkit's own ``cuda.h``: every driver entry point it declares,
  under the soname of the real driver (``libcuda.so.1``), so the link records the dependency and
  the driver supplies the functions at run time. A stub with no symbols would link too, but a
  linker that drops unused libraries (``--as-needed``) would then leave the driver out.
"""

from __future__ import annotations

import json
import os
import platform
import re
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from server.cuda_wheels import WHEEL_CUDA_RELEASE, WHEEL_MIN_DRIVER, WHEELS, install_wheels
from server.errors import BuildError
from server.file_lock import exclusive
from server.nvidia_smi import NvidiaSmiError, Runner, nvidia_smi
from tools.program_path import which_absolute

_COMPLETE = "localagent-toolkit.json"
_RELEASE = re.compile(r"release (\d+)\.(\d+)")
_DRIVER_CUDA = re.compile(r"CUDA Version:\s*(\d+)\.(\d+)")

Notice = Callable[[str], None]
Progress = Callable[[int, str], None]


@dataclass(frozen=True)
class CudaToolkit:
    source: Literal["system", "wheels"]
    root: Path
    nvcc: Path
    release: str  # "13.5", as nvcc reports it

    @property
    def major(self) -> int:
        return int(self.release.split(".")[0])

    @property
    def library_dir(self) -> Path:
        return self.root / "lib64" if (self.root / "lib64").is_dir() else self.root / "lib"

    def cmake_flags(self) -> list[str]:
        return [f"-DCMAKE_CUDA_COMPILER={self.nvcc}", f"-DCUDAToolkit_ROOT={self.root}"]

    def describe(self) -> str:
        if self.source == "system":
            return f"the system's CUDA {self.release} toolkit at {self.root}"
        return f"CUDA {self.release} from NVIDIA's PyPI wheels in {self.root}"

    def identity(self) -> str:
        return f"{self.source}:{self.release}:{self.root}"


def _run_nvcc(nvcc: Path, *args: str, check: bool) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run([str(nvcc), *args], capture_output=True, text=True, timeout=60, check=check)
    except (OSError, subprocess.SubprocessError) as exc:
        raise BuildError(f"{nvcc} does not run ({exc}); repair that CUDA toolkit or remove it from PATH") from None


def nvcc_release(nvcc: Path) -> str:
    text = _run_nvcc(nvcc, "--version", check=True).stdout
    match = _RELEASE.search(text)
    if match is None:
        raise BuildError(f"{nvcc} --version names no CUDA release; is it NVIDIA's nvcc?")
    return f"{match.group(1)}.{match.group(2)}"


def nvcc_home(nvcc: Path) -> Path:
    """The toolkit folder nvcc itself uses (its ``TOP``): ``nvcc`` on PATH may be a link or a
    wrapper script in another folder (``/usr/local/bin/nvcc`` running ``/usr/local/cuda-13.0/bin/nvcc``)."""
    text = _run_nvcc(nvcc, "--dryrun", "-c", "-x", "cu", os.devnull, "-o", os.devnull, check=False).stderr
    match = re.search(r"^#\$ TOP=(.+)$", text, re.MULTILINE)
    return Path(match.group(1).strip()).resolve() if match else nvcc.resolve().parent.parent


def missing_parts(root: Path) -> list[str]:
    """What ggml's CUDA backend needs that a toolkit folder lacks (a minimal install may hold
    the compiler and runtime but not cuBLAS)."""
    lib_dirs = [root / "lib64", root / "lib", *root.glob("targets/*/lib")]

    def has_library(name: str) -> bool:
        return any((folder / f"lib{name}.so").exists() for folder in lib_dirs)

    needed = {
        "the runtime headers (cuda_runtime.h)": (root / "include" / "cuda_runtime.h").is_file(),
        "the cuBLAS headers (cublas_v2.h)": (root / "include" / "cublas_v2.h").is_file(),
        "the runtime library (libcudart.so)": has_library("cudart"),
        "cuBLAS (libcublas.so)": has_library("cublas"),
    }
    return [part for part, present in needed.items() if not present]


def find_system_toolkit(
    env: Mapping[str, str] | None = None,
    which: Callable[[str], str | None] = which_absolute,
    default_roots: tuple[Path, ...] = (Path("/usr/local/cuda"),),
    notice: Notice | None = None,
) -> CudaToolkit | None:
    """The toolkit a person installed: CUDA_HOME or CUDA_PATH, then nvcc on PATH, then the
    default install folder. One named by the environment that cannot build is an error (the
    person meant that toolkit); one found otherwise that lacks a part is passed over, said in a
    notice, and the wheels serve instead."""
    env = os.environ if env is None else env
    for variable in ("CUDA_HOME", "CUDA_PATH"):
        if env.get(variable):
            root = Path(env[variable])
            nvcc = root / "bin" / "nvcc"
            if not nvcc.is_file():
                raise BuildError(f"{variable}={root} has no bin/nvcc; point it at a CUDA toolkit or unset it")
            missing = missing_parts(root)
            if missing:
                raise BuildError(
                    f"the CUDA toolkit in {variable}={root} lacks {', '.join(missing)}; install them, "
                    f"or unset {variable} to let localagent download a complete toolkit"
                )
            return CudaToolkit("system", root, nvcc, nvcc_release(nvcc))
    candidates: list[Path] = []
    found = which("nvcc")
    if found:
        candidates.append(Path(found))
    candidates += [root / "bin" / "nvcc" for root in default_roots if (root / "bin" / "nvcc").is_file()]
    seen: set[Path] = set()
    for nvcc in candidates:
        root = nvcc_home(nvcc)
        if root in seen:  # /usr/local/cuda is often where nvcc on PATH leads
            continue
        seen.add(root)
        missing = missing_parts(root)
        if not missing:
            return CudaToolkit("system", root, root / "bin" / "nvcc", nvcc_release(nvcc))
        if notice:
            notice(f"the CUDA toolkit at {root} lacks {', '.join(missing)}; passing it over")
    return None


def driver_cuda_version(run: Runner | None = None) -> tuple[int, int] | None:
    """The newest CUDA release the installed driver runs (nvidia-smi's header), or None without one."""
    try:
        text = nvidia_smi(run=run)
    except NvidiaSmiError:
        return None
    match = _DRIVER_CUDA.search(text)
    return (int(match.group(1)), int(match.group(2))) if match else None


def check_driver(toolkit_major: int, driver: tuple[int, int] | None, *, source: str) -> None:
    """A program built with CUDA N needs a driver for CUDA N or newer (same major: minor versions
    are compatible). Without nvidia-smi there is nothing to compare: a build for another machine."""
    if driver is None or driver[0] >= toolkit_major:
        return
    have = f"{driver[0]}.{driver[1]}"
    if source == "wheels":
        raise BuildError(
            f"this NVIDIA driver runs CUDA up to {have}, and the toolkit localagent would download is "
            f"CUDA {WHEEL_CUDA_RELEASE}, which needs driver {WHEEL_MIN_DRIVER} or newer: update the NVIDIA driver, "
            f"or install a CUDA {driver[0]}.x toolkit (nvcc on PATH) and build again"
        )
    raise BuildError(
        f"this NVIDIA driver runs CUDA up to {have}, older than the CUDA {toolkit_major} toolkit found: "
        f"update the NVIDIA driver, or put a CUDA {driver[0]}.x toolkit first (CUDA_HOME) and build again"
    )


# CUDA 13 compiles for Turing (sm_75) and newer only.
CUDA13_OLDEST_ARCH = 75


def check_architectures(toolkit_major: int, architectures: str | None, *, source: str) -> None:
    """``architectures``: CMake's list ("86;89"), or None when not known yet."""
    if toolkit_major < 13 or not architectures:
        return
    old = [a for a in architectures.split(";") if a.strip().isdigit() and int(a) < CUDA13_OLDEST_ARCH]
    if old:
        what = "the toolkit localagent would download" if source == "wheels" else "the CUDA toolkit found"
        raise BuildError(
            f"sm_{old[0]} is older than CUDA 13 compiles for (sm_{CUDA13_OLDEST_ARCH}, Turing, and newer), and "
            f"{what} is CUDA {toolkit_major}: install a CUDA 12.x toolkit (nvcc on PATH or CUDA_HOME) and build again"
        )


def wheel_toolkit_dir(cache: Path) -> Path:
    return cache / "cuda-toolkit" / f"{WHEEL_CUDA_RELEASE}-{platform.machine()}"


def download_lock(cache: Path) -> Path:
    return cache / ".cuda-toolkit-download.lock"


def cached_wheel_toolkit(cache: Path) -> CudaToolkit | None:
    """The wheel toolkit, if a complete one is in the cache (the marker is written last)."""
    marker = wheel_toolkit_dir(cache) / _COMPLETE
    try:
        recorded = json.loads(marker.read_text())
    except (OSError, ValueError):
        return None
    root = Path(recorded.get("root", ""))
    nvcc = root / "bin" / "nvcc"
    if recorded.get("wheels") != [list(w) for w in WHEELS] or not nvcc.is_file():
        return None
    return CudaToolkit("wheels", root, nvcc, WHEEL_CUDA_RELEASE)


def resolve_toolkit(
    cache: Path,
    index_url: str,
    notice: Notice,
    progress: Progress | None = None,
    *,
    driver: tuple[int, int] | None = None,
    system: CudaToolkit | Literal["find"] | None = "find",
    architectures: str | None = None,
) -> CudaToolkit:
    """The system toolkit if there is one, else the cached wheel toolkit, else a fresh download.
    The driver is checked first, so nothing is downloaded that it could not run."""
    found = find_system_toolkit(notice=notice) if system == "find" else system
    if found is not None:
        check_driver(found.major, driver, source="system")
        check_architectures(found.major, architectures, source="system")
        notice(f"compiling with {found.describe()}")
        return found
    check_driver(int(WHEEL_CUDA_RELEASE.split(".")[0]), driver, source="wheels")
    check_architectures(int(WHEEL_CUDA_RELEASE.split(".")[0]), architectures, source="wheels")
    target = wheel_toolkit_dir(cache)
    # A second download waits for the first, then finds its toolkit in the cache.
    with exclusive(download_lock(cache), "a CUDA toolkit download", notice):
        cached = cached_wheel_toolkit(cache)
        if cached is not None:
            notice(f"compiling with {cached.describe()}")
            return cached
        root = install_wheels(target, index_url, notice, progress)
        (target / _COMPLETE).write_text(json.dumps({"root": str(root), "wheels": [list(w) for w in WHEELS]}))
    return CudaToolkit("wheels", root, root / "bin" / "nvcc", WHEEL_CUDA_RELEASE)
