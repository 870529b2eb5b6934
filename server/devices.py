"""Which device serves a profile: the GPUs a llama-server binary can use (``--list-devices``), the
GPUs this machine has (``nvidia-smi``), and the one-line warning when the two disagree with the
profile: a CPU-only build on a machine with a GPU, or a GPU profile with no GPU to run on. Both
end in a server that works, slowly, which is why they are named before it starts."""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from server.nvidia_smi import Runner, gpu_rows
from server.profiles import Profile

# `  CUDA0: NVIDIA GeForce RTX 4090 (24080 MiB, 23700 MiB free)`, as common/arg.cpp prints it.
_DEVICE_LINE = re.compile(r"^\s+(?P<name>[^\s:]+): (?P<description>.+?) \((?P<total>\d+) MiB, \d+ MiB free\)\s*$")
CUDA_REBUILD = "localagent server build --cuda"
_NOT_GPUS = ("RPC", "BLAS", "ZenDNN", "zDNN")


@dataclass(frozen=True)
class BackendDevice:
    """A device other than the CPU that a llama-server build can offload to."""

    name: str  # "CUDA0", "RPC[127.0.0.1:50052]"
    description: str  # "NVIDIA GeForce RTX 4090"
    total_mib: int

    @property
    def is_gpu(self) -> bool:
        # --list-devices names every device but the CPU: RPC workers and accelerators such as BLAS
        # (which report no memory of their own) are not a GPU of this machine.
        return not self.name.startswith(_NOT_GPUS) and self.total_mib > 0

    def label(self) -> str:
        return f"{self.name} {self.description} ({self.total_mib:,} MiB)"


def parse_device_list(text: str) -> list[BackendDevice] | None:
    """The devices ``llama-server --list-devices`` printed; None when it printed no list at all."""
    lines = text.splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if line.strip() == "Available devices:")
    except StopIteration:
        return None
    devices = []
    for line in lines[start + 1 :]:
        if match := _DEVICE_LINE.match(line):
            devices.append(BackendDevice(match["name"], match["description"], int(match["total"])))
    return devices


def binary_devices(binary: Path, timeout: float = 20.0) -> list[BackendDevice] | None:
    """What the build can offload to on this machine; None when it cannot say (an old build)."""
    try:
        run = subprocess.run(
            [str(binary), "--list-devices"],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return parse_device_list(run.stdout + "\n" + run.stderr)


def visible_gpus(run: Runner | None = None) -> list[str]:
    """The names of the NVIDIA GPUs nvidia-smi lists; none without a driver or a GPU."""
    return gpu_rows("name", run=run)


def offloads_to_gpu(profile: Profile) -> bool:
    """The profile asks for layers on a GPU of this machine (RPC workers hold their own)."""
    asks = profile.gpu_layers not in (None, 0) or profile.speculative.draft_gpu_layers not in (None, 0)
    return asks and not profile.rpc_workers


@dataclass(frozen=True)
class DeviceChoice:
    serving: str  # "GPU CUDA0 NVIDIA GeForce RTX 4090 (24,080 MiB), all layers" or "CPU"
    warning: str | None = None


def device_choice(
    profile: Profile, devices: list[BackendDevice] | None, gpus: list[str], *, cuda_build: bool = False
) -> DeviceChoice:
    """Where `profile` runs on a binary offering `devices`, on a machine with `gpus`.
    ``cuda_build``: the binary was built with CUDA (its build record says so)."""
    if devices is None:
        return DeviceChoice("unknown (this llama-server has no --list-devices)")
    build_gpus = [device for device in devices if device.is_gpu]
    if profile.rpc_workers and not build_gpus:
        # The offloaded layers go to the workers' devices, whatever this machine has.
        return DeviceChoice(f"CPU + {len(profile.rpc_workers)} RPC workers")
    if gpus and not build_gpus and cuda_build:
        return DeviceChoice(
            "CPU",
            f"warning: this llama-server was built with CUDA but sees no GPU ({gpus[0]} is here): check the "
            "driver, CUDA_VISIBLE_DEVICES, and that its CUDA library loads (`localagent server which`)",
        )
    if gpus and not build_gpus:
        return DeviceChoice(
            "CPU",
            f"warning: this machine has a GPU ({gpus[0]}) but this llama-server was built without CUDA, so "
            f"{profile.name} runs on the CPU; run `{CUDA_REBUILD}`",
        )
    if not build_gpus:
        if offloads_to_gpu(profile):
            return DeviceChoice(
                "CPU",
                f"warning: profile {profile.name} is made for a GPU, but this machine shows none and this "
                f"llama-server has no GPU backend: it runs on the CPU, many times slower (on an NVIDIA "
                f"machine: `{CUDA_REBUILD}`)",
            )
        return DeviceChoice("CPU")
    if profile.gpu_layers == 0 and profile.speculative.draft_gpu_layers in (None, 0):
        return DeviceChoice("CPU (gpu_layers = 0)")
    layers = {None: "layers that fit", "auto": "layers that fit", "all": "all layers"}.get(
        profile.gpu_layers,  # type: ignore[arg-type]  # an int is looked up and falls through
        f"{profile.gpu_layers} layers",
    )
    return DeviceChoice(f"GPU {build_gpus[0].label()}, {layers}")
