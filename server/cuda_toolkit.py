"""The CUDA toolkit a ``--cuda`` build compiles with.

A system toolkit (``CUDA_HOME`` / ``CUDA_PATH``, ``nvcc`` on PATH, ``/usr/local/cuda``) is
preferred. A machine with only the NVIDIA driver, the usual gaming PC, gets NVIDIA's toolkit
wheels from PyPI instead, unpacked into localagent's cache (never into the user's Python). The
wheels hold a complete ``nvcc`` but are not laid out as a system toolkit, and CMake's
``FindCUDAToolkit`` needs two things they lack, so ``complete_layout`` adds them in the cache:

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

import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import tempfile
import zipfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import urljoin

from server.errors import BuildError
from tools.program_path import which_absolute

# One consistent CUDA 13.5 set: the compiler and its front end (crt headers, nvvm's cicc), the
# runtime, CCCL's headers (cub, thrust) and cuBLAS, which ggml's matrix products call.
WHEELS: tuple[tuple[str, str], ...] = (
    ("nvidia-cuda-nvcc", "13.5.37"),
    ("nvidia-cuda-crt", "13.5.37"),
    ("nvidia-cuda-runtime", "13.5.37"),
    ("nvidia-nvvm", "13.5.37"),
    ("nvidia-cuda-cccl", "13.3.5.0.6"),
    ("nvidia-cublas", "13.10.0.20"),
)
WHEEL_CUDA_RELEASE = "13.5"
# The driver branch that first runs CUDA 13 programs.
WHEEL_MIN_DRIVER = "R580"
# Linux wheels only: their tags differ between packages (manylinux2010, manylinux2014).
_WHEEL_MACHINES = ("x86_64", "aarch64")
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


@dataclass(frozen=True)
class WheelFile:
    name: str
    version: str
    filename: str
    url: str
    sha256: str
    size: int


def nvcc_release(nvcc: Path) -> str:
    try:
        text = subprocess.run([str(nvcc), "--version"], capture_output=True, text=True, timeout=60, check=True).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        raise BuildError(f"{nvcc} does not run ({exc}); repair that CUDA toolkit or remove it from PATH") from None
    match = _RELEASE.search(text)
    if match is None:
        raise BuildError(f"{nvcc} --version names no CUDA release; is it NVIDIA's nvcc?")
    return f"{match.group(1)}.{match.group(2)}"


def nvcc_home(nvcc: Path) -> Path:
    """The toolkit folder nvcc itself uses (its ``TOP``): ``nvcc`` on PATH may be a link or a
    wrapper script in another folder (``/usr/local/bin/nvcc`` running ``/usr/local/cuda-13.0/bin/nvcc``)."""
    try:
        text = subprocess.run(
            [str(nvcc), "--dryrun", "-c", "-x", "cu", os.devnull, "-o", os.devnull],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        ).stderr
    except (OSError, subprocess.SubprocessError) as exc:
        raise BuildError(f"{nvcc} does not run ({exc}); repair that CUDA toolkit or remove it from PATH") from None
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


def driver_cuda_version(
    run: Callable[..., subprocess.CompletedProcess[str]] = subprocess.run,
) -> tuple[int, int] | None:
    """The newest CUDA release the installed driver runs (nvidia-smi's header), or None without one."""
    try:
        text = run(["nvidia-smi"], capture_output=True, text=True, timeout=30, check=True).stdout
    except (OSError, subprocess.SubprocessError):
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


def plan_wheels(client, index_url: str, machine: str | None = None) -> list[WheelFile]:
    """Each pinned wheel for this platform, with its URL, sha256 and size from the index."""
    machine = machine or platform.machine()
    if machine not in _WHEEL_MACHINES:
        raise BuildError(
            f"NVIDIA publishes no CUDA toolkit wheels for {machine}; install the CUDA toolkit (nvcc) and build again"
        )
    files = []
    for name, version in WHEELS:
        page = f"{index_url}/{name}/"
        index = client.get(page, headers={"Accept": "application/vnd.pypi.simple.v1+json"})
        index.raise_for_status()
        try:
            listed = index.json()["files"]
        except (ValueError, KeyError, TypeError):
            raise BuildError(
                f"{page} is not a PEP 691 JSON index page; use pypi.org or install the CUDA toolkit"
            ) from None
        prefix = f"{name.replace('-', '_')}-{version}-"
        entry = next(
            (f for f in listed if isinstance(f, dict) and _is_linux_wheel(str(f.get("filename")), prefix, machine)),
            None,
        )
        if entry is None:
            raise BuildError(f"{name}=={version} for {machine} is not on {index_url}; install the CUDA toolkit instead")
        try:
            # A mirror may give URLs relative to the index page (PEP 691 allows it).
            url, sha256, size = urljoin(page, entry["url"]), entry["hashes"]["sha256"], int(entry["size"])
        except (KeyError, TypeError, ValueError):
            raise BuildError(
                f"{index_url} lists {entry.get('filename')} without its URL, sha256 or size; use pypi.org or install "
                "the CUDA toolkit"
            ) from None
        files.append(WheelFile(name, version, entry["filename"], url, sha256, size))
    return files


def _is_linux_wheel(filename: str, prefix: str, machine: str) -> bool:
    return filename.startswith(prefix) and "manylinux" in filename and filename.endswith(f"_{machine}.whl")


def install_wheel_toolkit(
    cache: Path, index_url: str, notice: Notice, progress: Progress | None = None, cc: str = "cc"
) -> CudaToolkit:
    """Download the pinned wheels (after saying what and how much), unpack them into the cache,
    complete the layout and mark it complete. A half-done install is never used."""
    import httpx2

    target = wheel_toolkit_dir(cache)
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        with httpx2.Client(timeout=httpx2.Timeout(30.0, read=300.0), follow_redirects=True) as client:
            files = plan_wheels(client, index_url)
            total = sum(f.size for f in files)
            notice(
                f"no CUDA toolkit on this machine: downloading NVIDIA's CUDA {WHEEL_CUDA_RELEASE} toolkit wheels "
                f"({len(files)} files, {total / 1e6:.0f} MB) into {target}"
            )
            with tempfile.TemporaryDirectory(dir=target.parent, prefix=".download-") as scratch:
                unpacked = Path(scratch) / "toolkit"
                done = 0
                for wheel in files:
                    archive = Path(scratch) / wheel.filename
                    _download(client, wheel, archive)
                    _unpack_wheel(archive, unpacked)
                    archive.unlink()
                    done += wheel.size
                    if progress:
                        progress(done * 100 // total, f"CUDA toolkit: {wheel.name}")
                root_in_scratch = _toolkit_root(unpacked)
                complete_layout(root_in_scratch, cc=cc)
                shutil.rmtree(target, ignore_errors=True)
                os.replace(unpacked, target)
    except httpx2.HTTPError as exc:
        raise BuildError(
            f"cannot download the CUDA toolkit wheels from {index_url} ({exc}); "
            "check the network, or install the CUDA toolkit (nvcc) and build again"
        ) from None
    root = _toolkit_root(target)
    (target / _COMPLETE).write_text(json.dumps({"root": str(root), "wheels": [list(w) for w in WHEELS]}))
    return CudaToolkit("wheels", root, root / "bin" / "nvcc", WHEEL_CUDA_RELEASE)


def _toolkit_root(unpacked: Path) -> Path:
    """The wheels install under ``nvidia/cu<major>/`` (bin, include, lib, nvvm side by side)."""
    roots = sorted(p.parent.parent for p in unpacked.glob("nvidia/cu*/bin/nvcc"))
    if len(roots) != 1:
        raise BuildError(f"the CUDA wheels unpacked into {unpacked} hold no single nvidia/cu*/bin/nvcc")
    return roots[0]


def _download(client, wheel: WheelFile, dest: Path) -> None:
    digest = hashlib.sha256()
    with client.stream("GET", wheel.url) as response, dest.open("wb") as out:
        response.raise_for_status()
        for chunk in response.iter_bytes(1 << 20):
            out.write(chunk)
            digest.update(chunk)
    if digest.hexdigest() != wheel.sha256:
        raise BuildError(f"the downloaded {wheel.filename} does not match its sha256; try again")


def _unpack_wheel(archive: Path, dest: Path) -> None:
    """The wheel's ``nvidia/`` tree, with the execute bits zip keeps in its external attributes
    (``zipfile`` drops them, and nvcc, cicc and ptxas must run)."""
    with zipfile.ZipFile(archive) as wheel:
        for info in wheel.infolist():
            if not info.filename.startswith("nvidia/") or info.is_dir():
                continue
            path = dest / info.filename
            if not path.resolve().is_relative_to(dest.resolve()):
                raise BuildError(f"{archive.name} holds a path outside its folder: {info.filename}")
            path.parent.mkdir(parents=True, exist_ok=True)
            with wheel.open(info) as src, path.open("wb") as out:
                shutil.copyfileobj(src, out, 1 << 20)
            mode = (info.external_attr >> 16) & 0o777
            if mode & 0o111:
                path.chmod(0o755)


def complete_layout(root: Path, cc: str = "cc") -> None:
    """Add what FindCUDAToolkit needs and the wheels lack (see the module's docstring)."""
    lib = root / "lib"
    for versioned in sorted(lib.glob("lib*.so.*")):
        plain = lib / (versioned.name.split(".so.")[0] + ".so")
        if not plain.exists():
            plain.symlink_to(versioned.name)
    stub = lib / "stubs" / "libcuda.so"
    if stub.exists():
        return
    header = root / "include" / "cuda.h"
    if not header.is_file():
        raise BuildError(f"{header} is missing: the CUDA toolkit in {root} is incomplete; remove it and build again")
    stub.parent.mkdir(parents=True, exist_ok=True)
    source = stub.parent / "libcuda_stub.c"
    source.write_text(driver_stub_source(header.read_text(errors="replace")))
    try:
        subprocess.run(
            [cc, "-shared", "-fPIC", "-o", str(stub), "-Wl,-soname,libcuda.so.1", str(source)],
            capture_output=True,
            text=True,
            timeout=300,
            check=True,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise BuildError(f"cannot build the CUDA driver stub with {cc} ({exc}); install a C compiler") from None


_DECLARED = re.compile(r"CUDAAPI\s+(cu[A-Za-z0-9_]+)\s*\(")
_RENAMED = re.compile(r"^\s*#\s*define\s+cu[A-Za-z0-9_]+\s+(cu[A-Za-z0-9_]+)\s*$", re.MULTILINE)


def driver_stub_source(cuda_h: str) -> str:
    """C for a stub driver library: one function per entry point ``cuda.h`` declares, under both
    its declared name and the versioned name a ``#define`` maps it to (``cuMemAlloc_v2``), as
    programs reference the latter. Never called: the real driver replaces it at run time."""
    names = sorted(set(_DECLARED.findall(cuda_h)) | set(_RENAMED.findall(cuda_h)))
    return "".join(f"int {name}(void) {{ return 999; }}\n" for name in names)


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
    cached = cached_wheel_toolkit(cache)
    if cached is not None:
        notice(f"compiling with {cached.describe()}")
        return cached
    return install_wheel_toolkit(cache, index_url, notice, progress)
