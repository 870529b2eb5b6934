"""``localagent server which``: the binary in use, what it can do, whether it passed its smoke
test here, and which device it serves the default profile on (the GPU traps named)."""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.markup import escape

from localagent.console import err, out

if TYPE_CHECKING:
    from localagent.context import AppContext
    from server.capabilities import Capabilities
    from server.devices import BackendDevice, DeviceChoice
    from server.manager import ServerManager
    from server.smoke import SmokeResult


def cmd_which(args: argparse.Namespace) -> int:
    from localagent.context import AppContext
    from server.build import build_info

    ctx = AppContext.load()
    manager = ctx.server_manager()
    found = manager.binary()
    caps = manager.capabilities(found.path)
    smoke = _smoke_result(ctx, found.path, caps, run_now=args.smoke)
    info = build_info(found.path)
    devices, gpus = manager.devices_here(found.path)
    choice = _serving(ctx, manager, found.path)
    summary: dict[str, Any] = {
        "binary": str(found.path),
        "found_via": found.origin,
        **caps.summary(),
        "smoke_test": None if smoke is None else ("passed" if smoke.passed else "failed"),
        "patches": info.get("patches", []) if info else None,
        "cuda": info.get("cuda") if info else None,
        "devices": None if devices is None else [device.label() for device in devices],
        "gpus": gpus,
        "serves": {"profile": choice.profile, "on": choice.choice.serving, "warning": choice.choice.warning},
    }
    if args.json:
        out.print_json(json.dumps(summary))
        return 0
    out.print(f"binary:     {found.path}  (from {found.origin})")
    _print_capabilities(caps, summary["flags"], info)
    out.print(f"smoke test: {escape(_smoke_words(smoke))}", soft_wrap=True)
    offered = "unknown (no --list-devices)" if devices is None else _device_list(devices)
    out.print(f"devices:    {escape(offered)}", soft_wrap=True)
    out.print(f"GPUs here:  {escape(', '.join(gpus) or 'none (nvidia-smi lists none)')}", soft_wrap=True)
    out.print(f"serves:     {choice.profile} on {escape(choice.choice.serving)}", soft_wrap=True)
    if choice.choice.warning:
        err.print(escape(choice.choice.warning), soft_wrap=True)
    return 1 if smoke is not None and not smoke.passed else 0


def _smoke_result(ctx: AppContext, binary: Path, caps: Capabilities, *, run_now: bool) -> SmokeResult | None:
    from server.build import smoke_records_dir
    from server.smoke import SmokeRecords, smoke_test_sync

    dirs = ctx.paths.server_dirs()
    records = SmokeRecords(smoke_records_dir(dirs.builds))
    if not run_now:
        return records.read(binary)
    smoke = smoke_test_sync(binary, dirs.model_dirs, ctx.paths.logs / "smoke.log", caps=caps)
    records.write(binary, smoke)
    return smoke


def _smoke_words(smoke: SmokeResult | None) -> str:
    if smoke is None:
        return "not run on this machine (run `localagent server which --smoke`)"
    if smoke.passed:
        return f"passed on this machine ({smoke.summary()})"
    return f"FAILED on this machine: {smoke.failure}"


@dataclass(frozen=True)
class _ProfileChoice:
    profile: str
    choice: DeviceChoice


def _serving(ctx: AppContext, manager: ServerManager, binary: Path) -> _ProfileChoice:
    """Where the default profile runs on this binary; a vLLM or SGLang profile runs on neither."""
    from server.devices import DeviceChoice
    from server.engines import display_name, launched_engine
    from server.profile_loading import get_profile

    profile = get_profile(ctx.profiles, ctx.profile_name())
    if launched_engine(profile) is not None:
        served_by = f"{display_name(profile.engine)}'s own GPUs, not this llama-server"
        return _ProfileChoice(profile.name, DeviceChoice(served_by))
    return _ProfileChoice(profile.name, manager.device_choice(profile, binary))


def _print_capabilities(caps: Capabilities, flags: dict[str, bool], info: dict[str, Any] | None) -> None:
    out.print(f"version:    {caps.version}")
    out.print(f"flavour:    {caps.flavour}")
    out.print(f"DFlash:     {caps.dflash_spec_type or 'not supported'}")
    out.print(f"spec types: {', '.join(caps.spec_types) or 'none'}")
    out.print(f"KV cache:   {', '.join(caps.cache_types)}")
    out.print("flags:      " + ", ".join(f"{name} {'yes' if ok else 'no'}" for name, ok in flags.items()))
    if info is None:
        out.print("patches:    unknown: not built by localagent (per-request speculation is probed when it starts)")
    else:
        out.print(f"patches:    {', '.join(info.get('patches') or []) or 'none'}")
        out.print(f"CUDA:       {escape(str(info.get('cuda') or 'no'))}", soft_wrap=True)


def _device_list(devices: list[BackendDevice]) -> str:
    return ", ".join(device.label() for device in devices) or "CPU only (no GPU backend in this build)"
