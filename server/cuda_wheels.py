"""NVIDIA's CUDA toolkit wheels from PyPI, for a machine with only the driver: which files, fetched
and checked against the index's sha256, unpacked with their execute bits into a folder of the
cache, and completed into the layout CMake expects (``server.cuda_layout``)."""

from __future__ import annotations

import hashlib
import os
import platform
import shutil
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urljoin

from server.cuda_layout import complete_layout
from server.errors import BuildError

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

Notice = Callable[[str], None]
Progress = Callable[[int, str], None]


@dataclass(frozen=True)
class WheelFile:
    name: str
    version: str
    filename: str
    url: str
    sha256: str
    size: int


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


def install_wheels(
    target: Path, index_url: str, notice: Notice, progress: Progress | None = None, cc: str = "cc"
) -> Path:
    """Download the pinned wheels (after saying what and how much), unpack them into ``target``
    with the layout completed, and return the toolkit's root in it. ``target`` appears whole or
    not at all: a half-done install is never seen."""
    import httpx2

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
    return _toolkit_root(target)


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
