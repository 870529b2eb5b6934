"""A built binary proves itself where it runs: build flags, cache keys per CPU, the smoke test,
and signals named with their cause. Failures use a stand-in binary; the real binary's smoke test
runs against the cached build."""

from __future__ import annotations

import asyncio
import shutil
import stat
import threading
import time
from pathlib import Path

import pytest

from server.argv import LaunchPlan
from server.binary import find_binary, newest_cached_build
from server.build import (
    BuildRequest,
    build_key,
    build_llama_server,
    cmake_flags,
    portable_cpu_targets,
    smoke_records_dir,
)
from server.cpu import NO_AMX_FLAGS, CpuInfo, parse_cpuinfo
from server.errors import BinaryError, BuildError, StartError
from server.exit_reasons import explain_exit
from server.file_lock import exclusive
from server.models import ModelDirs
from server.pinned_binary import PINNED_HELP
from server.process import ServerProcess
from server.smoke import SmokeRecords, run_smoke_test, smoke_test_sync
from server.supervisor import RestartPolicy, ServerState, Supervisor

FAKE = Path(__file__).resolve().parent / "support" / "fake_llama_server.py"
AMX_CPU = CpuInfo("x86_64", "Intel Xeon", ("amx_bf16", "amx_int8", "amx_tile", "avx2", "avx512f"), 2, 2)
PLAIN_CPU = CpuInfo("x86_64", "AMD EPYC", ("avx2", "avx512f"), 2, 2)


def _define(flags: list[str], name: str) -> str | None:
    prefix = f"-D{name}="
    return next((flag[len(prefix) :] for flag in flags if flag.startswith(prefix)), None)


# -- flags and keys -------------------------------------------------------------------------------


def test_native_x86_build_leaves_amx_out_of_c_and_cxx_and_keeps_native():
    flags = cmake_flags(BuildRequest(), AMX_CPU, accepts=lambda flag: True)
    assert _define(flags, "GGML_NATIVE") == "ON"
    for lang in ("C", "CXX"):
        value = _define(flags, f"CMAKE_{lang}_FLAGS")
        assert value is not None and set(NO_AMX_FLAGS) <= set(value.split())
    assert _define(flags, "BUILD_SHARED_LIBS") == "OFF"


def test_amx_switches_only_where_the_compiler_and_architecture_have_them():
    old_compiler = cmake_flags(BuildRequest(), AMX_CPU, accepts=lambda flag: False)
    assert _define(old_compiler, "CMAKE_C_FLAGS") is None
    arm = CpuInfo("aarch64", "Neoverse", ("asimd", "sve"), 4, 4)
    assert _define(cmake_flags(BuildRequest(), arm, accepts=lambda flag: True), "CMAKE_C_FLAGS") is None


def test_portable_build_uses_runtime_cpu_variants_like_release_builds():
    flags = cmake_flags(BuildRequest(portable=True), AMX_CPU, accepts=lambda flag: True)
    assert _define(flags, "GGML_NATIVE") == "OFF"
    assert _define(flags, "GGML_BACKEND_DL") == "ON"
    assert _define(flags, "GGML_CPU_ALL_VARIANTS") == "ON"
    assert _define(flags, "BUILD_SHARED_LIBS") == "ON"
    assert _define(flags, "CMAKE_INSTALL_RPATH") == "$ORIGIN"
    assert "-DBUILD_SHARED_LIBS=OFF" not in flags


def test_portable_variant_targets_skip_the_amx_variant():
    listing = "\n".join(
        f"... ggml-cpu-{name}" for name in ("x64", "sse42", "haswell", "icelake", "zen4", "sapphirerapids")
    )
    listing += "\n... llama-server\n... ggml-cpu-haswell\n"
    assert portable_cpu_targets(listing) == [
        "ggml-cpu-x64",
        "ggml-cpu-sse42",
        "ggml-cpu-haswell",
        "ggml-cpu-icelake",
        "ggml-cpu-zen4",
    ]


def test_native_cache_key_changes_with_the_cpu_flags_and_portable_does_not():
    native, portable = BuildRequest(), BuildRequest(portable=True)
    flags = cmake_flags(native, AMX_CPU, accepts=lambda flag: True)
    assert build_key(native, flags, AMX_CPU) != build_key(native, flags, PLAIN_CPU)
    pflags = cmake_flags(portable, AMX_CPU, accepts=lambda flag: True)
    assert build_key(portable, pflags, AMX_CPU) == build_key(portable, pflags, PLAIN_CPU)


def test_cpuinfo_keeps_instruction_sets_only_and_counts_physical_cores():
    text = "\n".join(
        [
            "processor\t: 0",
            "model name\t: Intel(R) Xeon(R)",
            "physical id\t: 0",
            "core id\t: 0",
            "flags\t\t: fpu hypervisor avx2 amx_tile constant_tsc avx512f",
            "",
            "processor\t: 1",
            "model name\t: Intel(R) Xeon(R)",
            "physical id\t: 0",
            "core id\t: 0",
            "flags\t\t: fpu hypervisor avx2 amx_tile constant_tsc avx512f",
        ]
    )
    model, flags, cores = parse_cpuinfo(text, "x86_64")
    assert model == "Intel(R) Xeon(R)"
    assert flags == ("amx_tile", "avx2", "avx512f")  # hypervisor/constant_tsc differ between hosts
    assert cores == 1  # two hyper-threads of one core


# -- the stand-in binary --------------------------------------------------------------------------


def _fake_binary(directory: Path, mode: str, name: str = "llama-server") -> Path:
    """An executable that runs the fake with FAKE_LLAMA_MODE baked in (the smoke test does not
    pass our environment through)."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(f"#!/bin/sh\nFAKE_LLAMA_MODE='{mode}' exec python3 {FAKE} \"$@\"\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def _plan(binary: Path, port: int, model_bytes: int | None = None) -> LaunchPlan:
    from server.ports import free_port

    port = port or free_port()
    return LaunchPlan(
        argv=[str(binary), "-m", "x.gguf", "--host", "127.0.0.1", "--port", str(port)],
        host="127.0.0.1",
        port=port,
        model_bytes=model_bytes,
    )


@pytest.mark.parametrize(
    ("signal_name", "words"),
    [
        ("SIGILL", ["SIGILL", "another CPU", "localagent server build --rebuild"]),
        ("SIGKILL", ["SIGKILL", "out of memory", "GiB", "available"]),
        ("SIGSEGV", ["SIGSEGV", "crashed", "Last log lines", "fake llama-server: mode"]),
        ("SIGABRT", ["SIGABRT", "crashed", "Last log lines"]),
    ],
)
async def test_a_server_killed_by_a_signal_while_starting_is_named_with_cause_and_fix(
    tmp_path: Path, signal_name: str, words: list[str]
):
    binary = _fake_binary(tmp_path / "bin", f"signal:{signal_name.removeprefix('SIG')}")
    process = ServerProcess(_plan(binary, 0, model_bytes=3 * 2**30), tmp_path / "server.log")
    await process.spawn()
    with pytest.raises(StartError) as caught:
        await process.wait_ready(30)
    message = str(caught.value)
    for word in words:
        assert word in message, message
    assert "code -" not in message  # a signal is named, never shown as a negative exit code


async def test_the_supervisor_names_the_signal_when_a_running_server_dies(tmp_path: Path):
    binary = _fake_binary(tmp_path / "bin", "serve-then:ILL")
    supervisor = Supervisor(
        _plan(binary, 0),
        tmp_path / "server.log",
        startup_timeout=30,
        policy=RestartPolicy(max_restarts=0),
    )
    await supervisor.start()
    try:
        for _ in range(100):
            if supervisor.status.state == ServerState.FAILED:
                break
            await asyncio.sleep(0.1)
        assert supervisor.status.state == ServerState.FAILED
        assert "SIGILL" in supervisor.status.message
        assert "localagent server build --rebuild" in supervisor.status.message
    finally:
        await supervisor.stop()


def test_exit_reasons_for_plain_codes():
    assert explain_exit(1, while_loading=True).headline.startswith("llama-server exited with code 1")
    assert "SIGTERM" in explain_exit(-15, while_loading=False).headline


# -- the smoke test -------------------------------------------------------------------------------


@pytest.fixture
def model_dirs(tmp_path: Path, shared_cache: Path) -> ModelDirs:
    return ModelDirs(models=tmp_path / "models", cache=shared_cache)


def test_smoke_test_fails_on_a_binary_that_dies_and_names_the_signal(tmp_path: Path, model_dirs: ModelDirs):
    binary = _fake_binary(tmp_path / "bin", "signal:ILL")
    result = smoke_test_sync(binary, model_dirs, tmp_path / "smoke.log")
    assert not result.passed
    assert "SIGILL" in result.failure and "smoke-target" in result.failure


def test_smoke_test_passes_a_binary_that_serves_drafts_and_stops(tmp_path: Path, model_dirs: ModelDirs):
    binary = _fake_binary(tmp_path / "bin", "serve")
    result = smoke_test_sync(binary, model_dirs, tmp_path / "smoke.log")
    assert result.passed, result.failure
    assert [check.name for check in result.checks] == ["smoke-target", "smoke-dflash", "smoke-quantized"]
    assert result.checks[1].drafted > 0


def _fake_source(tmp_path: Path, mode: str) -> Path:
    """A 'llama.cpp checkout' whose llama-server target is the stand-in binary: the real build
    path (configure, compile, stage, smoke test, cache) without a seven-minute compile."""
    source = tmp_path / "fake-llama.cpp"
    source.mkdir()
    script = _fake_binary(source, mode, name="llama-server.sh")
    (source / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.14)\nproject(fake NONE)\n"
        "add_custom_target(llama-server ALL\n"
        f"  COMMAND ${{CMAKE_COMMAND}} -E make_directory ${{CMAKE_BINARY_DIR}}/bin\n"
        f"  COMMAND ${{CMAKE_COMMAND}} -E copy {script} ${{CMAKE_BINARY_DIR}}/bin/llama-server)\n"
    )
    return source


FAKE_WORKER = """#!/usr/bin/env python3
# worker-build-{build}
import signal, socket, sys
sock = socket.create_server(("127.0.0.1", int(sys.argv[sys.argv.index("-p") + 1])))
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
while True:
    sock.accept()[0].close()
"""


def _with_worker_target(source: Path) -> Path:
    """The fake checkout gains upstream's worker target, ggml-rpc-server: a listener on its -p port
    whose second line says which build it is."""
    worker = source / "worker.sh"
    worker.write_text(FAKE_WORKER.format(build=1))
    worker.chmod(0o755)
    with (source / "CMakeLists.txt").open("a") as cmake:
        cmake.write(
            "add_custom_target(ggml-rpc-server ALL\n"
            "  COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/bin\n"
            f"  COMMAND ${{CMAKE_COMMAND}} -E copy {worker} ${{CMAKE_BINARY_DIR}}/bin/ggml-rpc-server)\n"
        )
    return worker


def test_a_rebuild_keeps_the_proven_worker_until_its_pair_passes(tmp_path: Path, model_dirs: ModelDirs):
    builds, work = tmp_path / "builds", tmp_path / "work"
    source = _fake_source(tmp_path, "serve")
    worker_script = _with_worker_target(source)
    request = BuildRequest(source=source, rebuild=True)
    first = build_llama_server(request, builds, work, verify=_verify(model_dirs))
    worker = first.binary.parent / "rpc-server"
    assert "# worker-build-1" in worker.read_text()
    # The next build's server dies in its smoke test: the proven pair stays as it was.
    worker_script.write_text(FAKE_WORKER.format(build=2))
    _fake_binary(source, "signal:ILL", name="llama-server.sh")
    with pytest.raises(BuildError, match="SIGILL"):
        build_llama_server(request, builds, work, verify=_verify(model_dirs))
    assert "# worker-build-1" in worker.read_text()
    assert not list(first.binary.parent.glob("*.partial"))
    # One that passes replaces both.
    _fake_binary(source, "serve", name="llama-server.sh")
    build_llama_server(request, builds, work, verify=_verify(model_dirs))
    assert "# worker-build-2" in worker.read_text()
    assert not list(first.binary.parent.glob("*.partial"))


def _verify(model_dirs: ModelDirs):
    return lambda binary, log: smoke_test_sync(binary, model_dirs, log)


def test_a_build_that_fails_its_smoke_test_is_an_error_and_nothing_is_cached(tmp_path: Path, model_dirs: ModelDirs):
    builds, work = tmp_path / "builds", tmp_path / "work"
    request = BuildRequest(source=_fake_source(tmp_path, "signal:ILL"))
    with pytest.raises(BuildError) as caught:
        build_llama_server(request, builds, work, verify=_verify(model_dirs))
    message = str(caught.value)
    assert "smoke test" in message and "SIGILL" in message and "smoke.log" in message
    assert "fake llama-server: mode signal:ILL" in message  # the log's tail is shown
    assert not list(builds.glob("*/llama-server")) and not list(builds.glob("*/llama-server.partial"))
    assert newest_cached_build(builds) is None
    if shutil.which("llama-server") is None:
        with pytest.raises(BinaryError, match="no llama-server found"):
            find_binary(None, builds)


def test_a_build_that_passes_is_cached_recorded_and_used(tmp_path: Path, model_dirs: ModelDirs):
    builds, work = tmp_path / "builds", tmp_path / "work"
    request = BuildRequest(source=_fake_source(tmp_path, "serve"))
    result = build_llama_server(request, builds, work, verify=_verify(model_dirs))
    assert not result.cached and result.smoke is not None and result.smoke.passed
    assert newest_cached_build(builds) == result.binary
    assert SmokeRecords(smoke_records_dir(builds)).passed(result.binary)
    again = build_llama_server(request, builds, work, verify=_verify(model_dirs))
    assert again.cached and again.smoke is None  # proven here before: not run again


def test_a_second_build_waits_for_the_first_and_then_finds_its_binary(tmp_path: Path, model_dirs: ModelDirs):
    from server import build

    builds, work = tmp_path / "builds", tmp_path / "work"
    request = BuildRequest(source=_fake_source(tmp_path, "serve"))
    notices: list[str] = []
    results: list[build.BuildResult] = []

    def second() -> None:
        results.append(build_llama_server(request, builds, work, verify=_verify(model_dirs), notice=notices.append))

    with exclusive(builds / ".build.lock", "the first build"):
        waiting = threading.Thread(target=second)
        waiting.start()
        deadline = time.monotonic() + 30
        while not notices and time.monotonic() < deadline:
            time.sleep(0.05)
        assert notices and "waiting for a llama-server build" in notices[0]
        # The first build, under the lock (what build_llama_server runs once it holds it).
        first = build._build_llama_server(request, builds, work, None, _verify(model_dirs), None, None)
    waiting.join(120)
    assert not first.cached and results and results[0].cached and results[0].binary == first.binary


def test_a_cached_build_not_proven_on_this_machine_is_not_used_and_a_build_tests_it(
    tmp_path: Path, model_dirs: ModelDirs
):
    # As in a home directory shared with another machine: the binary is in the cache under the
    # key this machine computes, but it has never been smoke-tested here, and here it dies.
    builds, work = tmp_path / "builds", tmp_path / "work"
    request = BuildRequest(source=_fake_source(tmp_path, "signal:ILL"))
    key = build_key(request, cmake_flags(request))
    _fake_binary(builds / key, "signal:ILL")
    assert newest_cached_build(builds) is None
    with pytest.raises(BuildError, match=r"SIGILL.*--rebuild"):
        build_llama_server(request, builds, work, verify=_verify(model_dirs))
    assert newest_cached_build(builds) is None


def test_which_reports_the_smoke_test_of_the_binary_in_use(la_env, tmp_path: Path):
    binary = _fake_binary(tmp_path / "bin", "serve")
    la_env.env["LOCALAGENT_LLAMA_SERVER"] = str(binary)
    before = la_env.run("server", "which")
    assert before.code == 0 and "not run on this machine" in before.stdout
    checked = la_env.run("server", "which", "--smoke")
    assert checked.code == 0, checked.stderr
    assert "passed on this machine" in checked.stdout
    after = la_env.run("server", "which")
    assert "passed on this machine" in after.stdout
    broken = _fake_binary(tmp_path / "bin2", "signal:ILL")
    la_env.env["LOCALAGENT_LLAMA_SERVER"] = str(broken)
    failed = la_env.run("server", "which", "--smoke")
    assert failed.code == 1 and "FAILED on this machine" in failed.stdout and "SIGILL" in failed.stdout


@pytest.mark.server
async def test_the_real_binary_passes_its_smoke_test_here(llama_server_binary: Path, model_dirs: ModelDirs, tmp_path):
    result = await run_smoke_test(llama_server_binary, model_dirs, tmp_path / "smoke.log")
    assert result.passed, result.failure
    names = [check.name for check in result.checks]
    # The build's own RPC worker, next to it, is proven too: the target served with its layers there.
    assert names == ["smoke-target", "smoke-rpc", "smoke-dflash", "smoke-quantized"]
    assert all(check.tokens > 0 for check in result.checks)
    assert result.checks[2].drafted > 0


# -- threads for CPU serving ----------------------------------------------------------------------


def test_auto_threads_leave_busy_cores_to_their_neighbours():
    from server.cpu_threads import choose_threads, running_tasks

    four = CpuInfo("x86_64", "x", ("avx2",), 8, 4)
    assert choose_threads(four, 0).threads == 4
    assert choose_threads(four, 3).threads == 1
    assert choose_threads(four, 9).threads == 1  # never zero
    assert running_tasks("cpu  1 2 3\nprocs_running 3\nprocs_blocked 0\n") == 3


def test_auto_threads_reach_the_command_line_and_fixed_threads_stay(monkeypatch):
    from server import argv as argv_module
    from server.argv import ResolvedModels, build_launch_plan
    from server.capabilities import parse_help
    from server.profiles import BUILTIN_PROFILES

    caps = parse_help(PINNED_HELP.read_text())
    monkeypatch.setattr(argv_module, "busy_cores", lambda: 1)
    monkeypatch.setattr(argv_module, "cpu_info", lambda: PLAIN_CPU)
    models = ResolvedModels(Path("/m.gguf"))
    plan = build_launch_plan(BUILTIN_PROFILES["tiny"], caps, Path("/bin/llama-server"), models)
    assert "-t 1 -tb 1" in plan.shell() and any("1 busy" in note for note in plan.notes)
    fixed = build_launch_plan(
        BUILTIN_PROFILES["tiny-dflash"],
        caps,
        Path("/bin/llama-server"),
        ResolvedModels(Path("/m.gguf"), Path("/d.gguf")),
    )
    assert "-t 1" in fixed.shell() and "-tb" not in fixed.shell()


def test_stop_strings_of_the_profile_reach_the_agent_request(la_env):
    from localagent.agent_setup import AgentOptions, request_sampling
    from localagent.context import AppContext

    ctx = AppContext.load(la_env.workspace)
    assert request_sampling(ctx, AgentOptions(profile="tiny"))["stop"] == ["<|im_end|>", "<|im_start|>"]
    assert "stop" not in request_sampling(ctx, AgentOptions(base_url="http://127.0.0.1:1/v1"))
