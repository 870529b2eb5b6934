"""The CUDA toolkit a --cuda build uses, found or fetched without a GPU: a system toolkit (by
CUDA_HOME, by nvcc on PATH even through a wrapper script, by the default folder), NVIDIA's wheels
from a package index when there is none, the layout FindCUDAToolkit needs, the driver check, and
the CMake flags and rpath of a CUDA build. Stand-in toolkits are folders with a scripted nvcc;
the stub driver library and the rpath are built by the real compiler and CMake."""

from __future__ import annotations

import ctypes
import hashlib
import http.server
import json
import shutil
import subprocess
import sys
import threading
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from server import cuda_toolkit, cuda_wheels
from server.build import BuildRequest, build_key, build_llama_server, cmake_flags
from server.cpu import CpuInfo
from server.cuda_layout import complete_layout, driver_stub_source
from server.cuda_toolkit import (
    CudaToolkit,
    cached_wheel_toolkit,
    check_driver,
    download_lock,
    driver_cuda_version,
    find_system_toolkit,
    missing_parts,
    resolve_toolkit,
)
from server.errors import BuildError
from server.file_lock import exclusive
from server.models import ModelDirs

CPU = CpuInfo("x86_64", "AMD EPYC", ("avx2", "avx512f"), 2, 2)
CUDA_H = """
CUresult CUDAAPI cuInit(unsigned int Flags);
#define cuMemAlloc                          cuMemAlloc_v2
CUresult CUDAAPI cuMemAlloc(CUdeviceptr *dptr, size_t bytesize);
CUresult CUDAAPI cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size);
"""
NVCC = """#!/bin/sh
# A stand-in nvcc: its version, and its TOP as the real one prints it under --dryrun.
case "$1" in
  --version) echo "Cuda compilation tools, release {release}, V{release}.1" ;;
  --dryrun) echo "#\\$ _HERE_={bin}" >&2; echo "#\\$ TOP={bin}/.." >&2 ;;
esac
"""


def fake_toolkit(root: Path, release: str = "12.4", *, cublas: bool = True, lib: str = "lib64") -> Path:
    (root / "bin").mkdir(parents=True)
    nvcc = root / "bin" / "nvcc"
    nvcc.write_text(NVCC.format(release=release, bin=root / "bin"))
    nvcc.chmod(0o755)
    (root / "include").mkdir()
    (root / "include" / "cuda_runtime.h").write_text("")
    (root / lib).mkdir()
    (root / lib / "libcudart.so").write_text("")
    if cublas:
        (root / "include" / "cublas_v2.h").write_text("")
        (root / lib / "libcublas.so").write_text("")
    return root


def wrapper_on_path(folder: Path, target: Path) -> Path:
    """Like /usr/local/bin/nvcc on some images: a script in another folder that runs the real nvcc."""
    folder.mkdir(parents=True, exist_ok=True)
    wrapper = folder / "nvcc"
    wrapper.write_text(f'#!/bin/sh\nexec {target} "$@"\n')
    wrapper.chmod(0o755)
    return wrapper


# -- finding a system toolkit ---------------------------------------------------------------------


def test_cuda_home_names_the_toolkit_and_its_release(tmp_path: Path) -> None:
    root = fake_toolkit(tmp_path / "cuda-12.4")
    found = find_system_toolkit(env={"CUDA_HOME": str(root)}, which=lambda _name: None, default_roots=())
    assert found == CudaToolkit("system", root, root / "bin" / "nvcc", "12.4")
    assert found.library_dir == root / "lib64"
    assert "system's CUDA 12.4" in found.describe()


def test_an_incomplete_toolkit_named_by_cuda_home_is_an_error_with_both_ways_out(tmp_path: Path) -> None:
    root = fake_toolkit(tmp_path / "cuda", cublas=False)
    with pytest.raises(BuildError) as caught:
        find_system_toolkit(env={"CUDA_HOME": str(root)}, which=lambda _name: None, default_roots=())
    message = str(caught.value)
    assert "cuBLAS" in message and "unset CUDA_HOME" in message and "\n" not in message


def test_nvcc_on_path_through_a_wrapper_script_leads_to_its_real_folder(tmp_path: Path) -> None:
    root = fake_toolkit(tmp_path / "cuda-13.0", release="13.0")
    wrapper = wrapper_on_path(tmp_path / "usr-local-bin", root / "bin" / "nvcc")
    found = find_system_toolkit(env={}, which=lambda _name: str(wrapper), default_roots=())
    assert found is not None and found.root == root.resolve() and found.release == "13.0"


def test_an_incomplete_toolkit_found_on_path_is_passed_over_once_with_a_notice(tmp_path: Path) -> None:
    # The image this runs on has exactly this: /usr/local/bin/nvcc -> /usr/local/cuda-13.0 without
    # cuBLAS, and /usr/local/cuda linking to the same folder.
    root = fake_toolkit(tmp_path / "cuda-13.0", release="13.0", cublas=False)
    (tmp_path / "cuda").symlink_to(root)
    wrapper = wrapper_on_path(tmp_path / "bin", root / "bin" / "nvcc")
    notices: list[str] = []
    found = find_system_toolkit(
        env={}, which=lambda _name: str(wrapper), default_roots=(tmp_path / "cuda",), notice=notices.append
    )
    assert found is None
    assert len(notices) == 1 and "lacks" in notices[0] and "cuBLAS (libcublas.so)" in notices[0]


def test_the_default_folder_serves_when_nothing_else_names_a_toolkit(tmp_path: Path) -> None:
    root = fake_toolkit(tmp_path / "cuda", lib="lib")
    found = find_system_toolkit(env={}, which=lambda _name: None, default_roots=(root,))
    assert found is not None and found.root == root.resolve() and found.library_dir == root.resolve() / "lib"
    assert find_system_toolkit(env={}, which=lambda _name: None, default_roots=(tmp_path / "none",)) is None


def test_missing_parts_names_each_part_ggml_needs(tmp_path: Path) -> None:
    assert missing_parts(fake_toolkit(tmp_path / "full")) == []
    (tmp_path / "empty").mkdir()
    assert len(missing_parts(tmp_path / "empty")) == 4


# -- the driver -----------------------------------------------------------------------------------

SMI_HEADER = "| NVIDIA-SMI 550.54.15    Driver Version: 550.54.15    CUDA Version: 12.4     |\n"


def test_the_drivers_cuda_version_is_read_from_nvidia_smi() -> None:
    def smi(argv, **_kwargs):
        return subprocess.CompletedProcess(argv, 0, stdout=SMI_HEADER, stderr="")

    def missing(argv, **_kwargs):
        raise FileNotFoundError("nvidia-smi")

    assert driver_cuda_version(run=smi) == (12, 4)
    assert driver_cuda_version(run=missing) is None


def test_an_old_driver_stops_the_wheel_toolkit_before_any_download_with_both_ways_out(tmp_path: Path) -> None:
    with pytest.raises(BuildError) as caught:
        resolve_toolkit(tmp_path, "http://127.0.0.1:9/simple", lambda _line: None, driver=(12, 4), system=None)
    message = str(caught.value)
    assert "CUDA up to 12.4" in message and "R580" in message
    assert "update the NVIDIA driver" in message and "CUDA 12.x toolkit" in message
    check_driver(13, (13, 0), source="wheels")  # a newer minor release runs on a 13.0 driver
    check_driver(13, None, source="wheels")  # no nvidia-smi: building for another machine


def test_a_system_toolkit_newer_than_the_driver_is_refused(tmp_path: Path) -> None:
    root = fake_toolkit(tmp_path / "cuda", release="13.0")
    toolkit = CudaToolkit("system", root, root / "bin" / "nvcc", "13.0")
    with pytest.raises(BuildError, match="older than the CUDA 13 toolkit"):
        resolve_toolkit(tmp_path, "unused", lambda _line: None, driver=(12, 8), system=toolkit)


# -- the wheels -----------------------------------------------------------------------------------


def _wheel(path: Path, files: dict[str, tuple[str, int]]) -> None:
    with zipfile.ZipFile(path, "w") as archive:
        for name, (text, mode) in files.items():
            info = zipfile.ZipInfo(name)
            info.external_attr = (0o100000 | mode) << 16
            archive.writestr(info, text)
        archive.writestr("nvidia_fake-1.dist-info/METADATA", "Name: fake\n")


@pytest.fixture
def wheel_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, list[str]]]:
    """A package index serving the pinned wheel names, small: nvcc and the headers and libraries
    the layout step works on, on a machine taken as x86_64 (the pinned wheels' own). Yields its URL
    and the paths it served."""
    monkeypatch.setattr(cuda_toolkit.platform, "machine", lambda: "x86_64")
    served = tmp_path / "index"
    served.mkdir()
    content = {
        "nvidia-cuda-nvcc": {"nvidia/cu13/bin/nvcc": (NVCC.format(release="13.5", bin="x"), 0o755)},
        "nvidia-cuda-runtime": {
            "nvidia/cu13/include/cuda.h": (CUDA_H, 0o644),
            "nvidia/cu13/include/cuda_runtime.h": ("", 0o644),
            "nvidia/cu13/lib/libcudart.so.13": ("", 0o644),
        },
        "nvidia-cublas": {
            "nvidia/cu13/include/cublas_v2.h": ("", 0o644),
            "nvidia/cu13/lib/libcublas.so.13": ("", 0o644),
            "nvidia/cu13/lib/libcublasLt.so.13": ("", 0o644),
        },
    }
    requests: list[str] = []
    for name, version in cuda_toolkit.WHEELS:
        filename = f"{name.replace('-', '_')}-{version}-py3-none-manylinux2010_x86_64.manylinux_2_12_x86_64.whl"
        _wheel(served / filename, content.get(name, {}))
        other = f"{name.replace('-', '_')}-{version}-py3-none-win_amd64.whl"
        files = [
            {"filename": other, "url": f"/files/{other}", "hashes": {"sha256": "0" * 64}, "size": 1},
            {
                "filename": filename,
                "url": f"/files/{filename}",
                "hashes": {"sha256": hashlib.sha256((served / filename).read_bytes()).hexdigest()},
                "size": (served / filename).stat().st_size,
            },
        ]
        (served / f"{name}.json").write_text(json.dumps({"files": files}))

    class Index(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            requests.append(self.path)
            if self.path.startswith("/simple/"):
                body = (served / f"{self.path.split('/')[2]}.json").read_bytes()
            else:
                body = (served / self.path.removeprefix("/files/")).read_bytes()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Index)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/simple", requests
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.skipif(sys.platform != "linux" or shutil.which("cc") is None, reason="the stub needs Linux and cc")
def test_without_a_toolkit_the_wheels_are_fetched_once_into_the_cache_and_completed(
    tmp_path: Path, wheel_index: tuple[str, list[str]]
) -> None:
    url, requests = wheel_index
    cache = tmp_path / "cache"
    notices: list[str] = []
    toolkit = resolve_toolkit(cache, url, notices.append, driver=(13, 0), system=None)
    root = cache / "cuda-toolkit" / "13.5-x86_64" / "nvidia" / "cu13"
    assert toolkit == CudaToolkit("wheels", root, root / "bin" / "nvcc", "13.5")
    # Said before downloading: what, how much, where.
    assert "downloading NVIDIA's CUDA 13.5 toolkit wheels (6 files" in notices[0] and str(cache) in notices[0]
    assert (root / "bin" / "nvcc").stat().st_mode & 0o111  # zip's execute bit survives
    assert not list((cache / "cuda-toolkit" / "13.5-x86_64").glob("*.dist-info"))
    # FindCUDAToolkit's names: unversioned libraries beside the versioned ones...
    assert (root / "lib" / "libcudart.so").readlink() == Path("libcudart.so.13")
    assert (root / "lib" / "libcublasLt.so").is_symlink()
    # ...and the driver stub: the real driver's soname, every entry point cuda.h declares.
    stub = root / "lib" / "stubs" / "libcuda.so"
    soname = subprocess.run(["readelf", "-d", str(stub)], capture_output=True, text=True, check=True).stdout
    assert "[libcuda.so.1]" in soname
    library = ctypes.CDLL(str(stub))
    assert library.cuInit and library.cuMemAlloc_v2 and library.cuMemCreate
    # The second build finds it in the cache and downloads nothing.
    fetched = len(requests)
    again = resolve_toolkit(cache, url, notices.append, driver=None, system=None)
    assert again == toolkit and len(requests) == fetched and "compiling with CUDA 13.5" in notices[-1]


@pytest.mark.skipif(sys.platform != "linux" or shutil.which("cc") is None, reason="the stub needs Linux and cc")
def test_a_second_download_waits_for_the_first_and_fetches_nothing_meanwhile(
    tmp_path: Path, wheel_index: tuple[str, list[str]]
) -> None:
    url, requests = wheel_index
    cache = tmp_path / "cache"
    notices: list[str] = []
    results: list[CudaToolkit] = []

    def second_build() -> None:
        results.append(resolve_toolkit(cache, url, notices.append, driver=(13, 0), system=None))

    with exclusive(download_lock(cache), "the first build's download"):
        worker = threading.Thread(target=second_build)
        worker.start()
        deadline = time.monotonic() + 30
        while not any("waiting for a CUDA toolkit download" in n for n in notices) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert any("waiting for a CUDA toolkit download in pid" in n for n in notices), notices
        assert requests == []  # nothing fetched while the other holds the lock
    worker.join(120)
    assert results and results[0].nvcc.is_file() and requests


def test_a_wheel_with_another_hash_is_refused_and_nothing_is_cached(
    tmp_path: Path, wheel_index: tuple[str, list[str]]
) -> None:
    url, _requests = wheel_index
    index = tmp_path / "index" / "nvidia-cublas.json"
    entries = json.loads(index.read_text())
    entries["files"][1]["hashes"]["sha256"] = "f" * 64
    index.write_text(json.dumps(entries))
    with pytest.raises(BuildError, match="does not match its sha256"):
        resolve_toolkit(tmp_path / "cache", url, lambda _line: None, system=None)
    assert cached_wheel_toolkit(tmp_path / "cache") is None
    assert not list((tmp_path / "cache" / "cuda-toolkit").iterdir())  # the scratch folder went too


def test_an_unreachable_index_is_one_line_naming_both_ways_out(tmp_path: Path) -> None:
    with pytest.raises(BuildError) as caught:
        resolve_toolkit(tmp_path, "http://127.0.0.1:9/simple", lambda _line: None, system=None)
    assert "check the network, or install the CUDA toolkit" in str(caught.value)


def test_a_machine_without_linux_wheels_is_told_to_install_the_toolkit() -> None:
    with pytest.raises(BuildError, match="no CUDA toolkit wheels for riscv64"):
        cuda_wheels.plan_wheels(None, "unused", machine="riscv64")


def test_the_stub_source_covers_declared_and_versioned_names() -> None:
    source = driver_stub_source(CUDA_H)
    assert "int cuInit(void)" in source and "int cuMemAlloc_v2(void)" in source
    assert "int cuMemCreate(void)" in source


def test_complete_layout_keeps_what_is_there(tmp_path: Path) -> None:
    lib = tmp_path / "lib"
    (lib / "stubs").mkdir(parents=True)
    (lib / "libcudart.so.13").write_text("")
    (lib / "libcudart.so").write_text("a real file")
    (lib / "stubs" / "libcuda.so").write_text("an existing stub")
    complete_layout(tmp_path)
    assert (lib / "libcudart.so").read_text() == "a real file"
    assert (lib / "stubs" / "libcuda.so").read_text() == "an existing stub"


# -- flags, key and rpath -------------------------------------------------------------------------


def _define(flags: list[str], name: str) -> str | None:
    prefix = f"-D{name}="
    return next((flag[len(prefix) :] for flag in flags if flag.startswith(prefix)), None)


def test_a_cuda_build_is_a_portable_build_plus_a_loadable_cuda_backend(tmp_path: Path) -> None:
    root = fake_toolkit(tmp_path / "cuda")
    toolkit = CudaToolkit("system", root, root / "bin" / "nvcc", "12.4")
    flags = cmake_flags(BuildRequest(cuda=True, cuda_arch="89"), CPU, accepts=lambda _f: True, toolkit=toolkit)
    assert _define(flags, "GGML_BACKEND_DL") == "ON" and _define(flags, "BUILD_SHARED_LIBS") == "ON"
    assert _define(flags, "GGML_NATIVE") == "OFF" and _define(flags, "GGML_CPU_ALL_VARIANTS") == "ON"
    assert _define(flags, "GGML_CUDA") == "ON" and _define(flags, "CMAKE_CUDA_ARCHITECTURES") == "89"
    assert _define(flags, "CMAKE_CUDA_COMPILER") == str(root / "bin" / "nvcc")
    assert _define(flags, "CUDAToolkit_ROOT") == str(root)
    assert _define(flags, "CMAKE_INSTALL_RPATH") == f"$ORIGIN;{root / 'lib64'}"
    with pytest.raises(BuildError):
        cmake_flags(BuildRequest(cuda=True, cuda_arch="89"), CPU, accepts=lambda _f: True)


def test_the_cache_key_follows_the_toolkit_release(tmp_path: Path) -> None:
    root = fake_toolkit(tmp_path / "cuda")
    request = BuildRequest(cuda=True, cuda_arch="89")
    old = CudaToolkit("system", root, root / "bin" / "nvcc", "12.4")
    new = CudaToolkit("system", root, root / "bin" / "nvcc", "12.8")
    flags = cmake_flags(request, CPU, accepts=lambda _f: True, toolkit=old)
    assert build_key(request, flags, CPU, old) != build_key(request, flags, CPU, new)


@pytest.mark.skipif(shutil.which("cmake") is None or shutil.which("cc") is None, reason="needs cmake and cc")
def test_the_rpath_flags_let_a_loadable_module_find_the_toolkit_library_from_any_shell(tmp_path: Path) -> None:
    """The CUDA build's rpath flags, given to CMake on a small project shaped like ggml's: a module
    linked against a library in the 'toolkit', loaded by a program from another directory with an
    empty LD_LIBRARY_PATH."""
    toolkit_lib = tmp_path / "toolkit" / "lib64"
    toolkit_lib.mkdir(parents=True)
    (tmp_path / "rt.c").write_text("int runtime_answer(void) { return 42; }\n")
    subprocess.run(
        ["cc", "-shared", "-fPIC", "-o", str(toolkit_lib / "libfakert.so"), str(tmp_path / "rt.c")], check=True
    )
    project = tmp_path / "project"
    project.mkdir()
    (project / "module.c").write_text("int runtime_answer(void);\nint answer(void) { return runtime_answer(); }\n")
    (project / "main.c").write_text(
        "#include <dlfcn.h>\n#include <stdio.h>\n"
        "int main(int c, char **v) { void *h = dlopen(v[1], RTLD_NOW); if (!h) { puts(dlerror()); return 1; }\n"
        '  int (*f)(void) = (int (*)(void))dlsym(h, "answer"); printf("%d\\n", f()); return 0; }\n'
    )
    (project / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.14)\nproject(rpath C)\n"
        f"add_library(fakecuda MODULE module.c)\ntarget_link_libraries(fakecuda {toolkit_lib / 'libfakert.so'})\n"
        "add_executable(host main.c)\ntarget_link_libraries(host ${CMAKE_DL_LIBS})\n"
    )
    fake_root = fake_toolkit(tmp_path / "cuda")
    shutil.rmtree(fake_root / "lib64")
    (fake_root / "lib64").symlink_to(toolkit_lib)
    toolkit = CudaToolkit("system", fake_root, fake_root / "bin" / "nvcc", "12.4")
    flags = cmake_flags(BuildRequest(cuda=True, cuda_arch="89"), CPU, accepts=lambda _f: True, toolkit=toolkit)
    rpath_flags = [f for f in flags if "RPATH" in f]
    build = tmp_path / "build"
    subprocess.run(["cmake", "-S", str(project), "-B", str(build), *rpath_flags], check=True, capture_output=True)
    subprocess.run(["cmake", "--build", str(build)], check=True, capture_output=True)
    module = build / "libfakecuda.so"
    dynamic = subprocess.run(["readelf", "-d", str(module)], capture_output=True, text=True, check=True).stdout
    assert f"$ORIGIN:{fake_root / 'lib64'}" in dynamic
    ran = subprocess.run(
        [str(build / "host"), str(module)], capture_output=True, text=True, cwd="/", env={"PATH": "/usr/bin:/bin"}
    )
    assert ran.stdout.strip() == "42", ran.stdout


# -- the build, end to end with stand-ins -------------------------------------------------------------


def test_a_cuda_build_names_the_cuda_backend_and_stages_it_beside_the_binary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shared_cache: Path
) -> None:
    """The build path of --cuda with a stand-in source and toolkit: the toolkit reaches CMake, the
    ggml-cuda target is built, its library is staged and cached with the binary, and build.json
    says which toolkit compiled it."""
    from tests.test_server_portability import _fake_source, _verify

    root = fake_toolkit(tmp_path / "cuda")
    monkeypatch.setenv("CUDA_HOME", str(root))
    monkeypatch.setattr("server.build.driver_cuda_version", lambda: None)
    source = _fake_source(tmp_path, "serve")
    cmake = source / "CMakeLists.txt"
    cmake.write_text(
        cmake.read_text() + "add_custom_target(ggml-cuda\n"
        "  COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/bin\n"
        '  COMMAND ${CMAKE_COMMAND} -E echo "${CUDAToolkit_ROOT} ${CMAKE_CUDA_ARCHITECTURES}" > '
        "${CMAKE_BINARY_DIR}/bin/libggml-cuda.so\n"
        "  COMMAND ${CMAKE_COMMAND} -E create_symlink libggml-cuda.so ${CMAKE_BINARY_DIR}/bin/libggml-cuda.so.0)\n"
    )
    model_dirs = ModelDirs(models=tmp_path / "models", cache=shared_cache)
    notices: list[str] = []
    result = build_llama_server(
        BuildRequest(source=source, cuda=True, cuda_arch="89"),
        tmp_path / "builds",
        tmp_path / "work",
        verify=_verify(model_dirs),
        notice=notices.append,
    )
    staged = result.binary.parent / "libggml-cuda.so"
    assert staged.read_text().strip() == f"{root} 89"
    # A versioned name stays a link, not a second copy of the library.
    assert (result.binary.parent / "libggml-cuda.so.0").readlink() == Path("libggml-cuda.so")
    info = json.loads((result.binary.parent / "build.json").read_text())
    assert info["cuda"] == f"the system's CUDA 12.4 toolkit at {root}" and info["portable"] is False
    assert notices == [f"compiling with the system's CUDA 12.4 toolkit at {root}"]


def test_an_architecture_cuda_13_dropped_is_refused_before_any_download(tmp_path: Path) -> None:
    with pytest.raises(BuildError) as caught:
        resolve_toolkit(tmp_path, "http://127.0.0.1:9/simple", lambda _line: None, system=None, architectures="61")
    message = str(caught.value)
    assert "sm_61" in message and "CUDA 12.x toolkit" in message
    assert not (tmp_path / "cuda-toolkit").exists()
    old_system = CudaToolkit("system", tmp_path, tmp_path / "bin" / "nvcc", "12.4")
    assert resolve_toolkit(tmp_path, "unused", lambda _line: None, system=old_system, architectures="61") is old_system


def test_a_wheel_holding_a_path_outside_its_folder_is_refused(tmp_path: Path) -> None:
    archive = tmp_path / "evil.whl"
    _wheel(archive, {"nvidia/../../escaped.txt": ("x", 0o644)})
    with pytest.raises(BuildError, match="outside its folder"):
        cuda_wheels._unpack_wheel(archive, tmp_path / "out")
    assert not (tmp_path / "escaped.txt").exists()


def test_an_index_page_without_sizes_is_one_line_not_a_traceback(
    tmp_path: Path, wheel_index: tuple[str, list[str]]
) -> None:
    url, _requests = wheel_index
    index = tmp_path / "index" / "nvidia-cuda-nvcc.json"
    entries = json.loads(index.read_text())
    del entries["files"][1]["size"]
    index.write_text(json.dumps(entries))
    with pytest.raises(BuildError, match="without its URL, sha256 or size"):
        resolve_toolkit(tmp_path / "cache", url, lambda _line: None, system=None)
