"""``localagent server ...``: build, inspect, start, stop and watch llama-server."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import TYPE_CHECKING

from rich.markup import escape
from rich.table import Column, Table

from localagent.console import err, out
from localagent.errors import LocalAgentError, UsageError
from tools.terminal_text import terminal_safe

if TYPE_CHECKING:
    from localagent.context import AppContext
    from server.devices import BackendDevice


def register(commands: argparse._SubParsersAction) -> None:
    server = commands.add_parser("server", help="build, start, stop and inspect llama-server")
    sub = server.add_subparsers(dest="server_command", metavar="ACTION", required=True)
    _register_binary(sub)
    _register_lifecycle(sub)
    _register_inspection(sub)
    from localagent import worker_command

    worker_command.register(sub)


def _register_binary(sub: argparse._SubParsersAction) -> None:
    """build, which, cmd: the binary and the command line it gets."""
    build = sub.add_parser("build", help="build llama-server and its RPC worker, and cache them")
    build.add_argument("--cuda", action="store_true", help="build with CUDA for this machine's GPU")
    build.add_argument("--cuda-arch", help="CUDA architecture, e.g. 89 (RTX 4090); default: from nvidia-smi")
    build.add_argument("--source", type=Path, help="a llama.cpp or BeeLlama checkout (default: the pinned PyPI sdist)")
    build.add_argument("--jobs", "-j", type=int, help="parallel compile jobs (default: all cores)")
    build.add_argument(
        "--portable",
        action="store_true",
        help="CPU variants chosen at run time, for a binary copied between machines (slower to build)",
    )
    build.add_argument("--rebuild", action="store_true", help="build again even if a cached build exists")
    build.set_defaults(handler=cmd_build)

    which = sub.add_parser("which", help="show the llama-server in use, its version and capabilities")
    which.add_argument("--json", action="store_true", help="print the same as JSON")
    which.add_argument("--smoke", action="store_true", help="run the smoke test for this binary on this machine now")
    which.set_defaults(handler=cmd_which)

    cmd = sub.add_parser("cmd", help="print the exact llama-server command line for a profile")
    cmd.add_argument("profile", nargs="?", help="default: the configured profile")
    cmd.add_argument("--port", type=int, help="the port in the command (default: server.port, 8910)")
    cmd.add_argument("--host", help="the address in the command (default: server.host, 127.0.0.1)")
    cmd.set_defaults(handler=cmd_cmd)


def _register_lifecycle(sub: argparse._SubParsersAction) -> None:
    """start, stop: a managed server in the background."""
    start = sub.add_parser("start", help="start a profile's server in the background and wait until ready")
    start.add_argument("profile", nargs="?", help="default: the configured profile")
    start.add_argument("--port", help="port number, or 'auto' for a free one (default: 8910)")
    start.add_argument("--host", help="address to listen on (default: server.host, 127.0.0.1)")
    start.add_argument(
        "--no-api-key",
        action="store_true",
        help="on a non-loopback --host, serve without an API key (anyone on the network can use it)",
    )
    start.set_defaults(handler=cmd_start)

    stop = sub.add_parser("stop", help="stop managed servers (all, or the one on --port)")
    stop.add_argument("--port", type=int, help="stop only the server on this port")
    stop.set_defaults(handler=cmd_stop)


def _register_inspection(sub: argparse._SubParsersAction) -> None:
    """status, logs, check, profiles: what is running, what it says, and what it can do."""
    status = sub.add_parser("status", help="show managed servers")
    status.add_argument("--json", action="store_true", help="print the same as JSON")
    status.set_defaults(handler=cmd_status)

    logs = sub.add_parser("logs", help="print a managed server's log")
    logs.add_argument(
        "--port", type=int, help="the server on this port (default: the only one running, else server.port)"
    )
    logs.add_argument("-f", "--follow", action="store_true", help="keep printing new lines")
    logs.add_argument("-n", "--lines", type=int, default=50, help="how many of the last lines (default: 50)")
    logs.set_defaults(handler=cmd_logs)

    check = sub.add_parser(
        "check", help="self-test: start a profile on this binary, check that it drafts, report acceptance"
    )
    check.add_argument("profile", nargs="?", default="tiny-dflash", help="default: tiny-dflash (seconds, no download)")
    check.add_argument("--max-tokens", type=int, default=64, help="tokens to generate (default: 64)")
    check.set_defaults(handler=cmd_check)

    profiles = sub.add_parser("profiles", help="list the known profiles")
    profiles.set_defaults(handler=cmd_profiles)

    plan = sub.add_parser(
        "plan", help="GPU memory a profile needs (weights, draft, KV cache, buffers) against the card, before loading"
    )
    plan.add_argument("profile", nargs="?", help="default: the configured profile")
    plan.add_argument("--vram", type=float, metavar="GiB", help="the card's memory (default: from nvidia-smi)")
    plan.add_argument("--json", action="store_true", help="print the same as JSON")
    plan.set_defaults(handler=cmd_plan)


def _load_context() -> AppContext:
    """Settings and profiles, loaded by the commands that use them (`status` does not: it answers
    before pydantic-settings would have finished importing)."""
    from localagent.context import AppContext

    return AppContext.load()


def _profile_name(ctx: AppContext, given: str | None) -> str:
    from server.defaults import DEFAULT_PROFILE

    return given or ctx.settings.server.profile or DEFAULT_PROFILE


def cmd_build(args: argparse.Namespace) -> int:
    ctx = _load_context()
    if args.jobs is not None and args.jobs < 1:
        raise UsageError(f"--jobs {args.jobs} must be at least 1")
    if args.cuda_arch and not args.cuda:
        raise UsageError("--cuda-arch goes with --cuda")
    from localagent.build_progress import build_with_progress
    from server.build import BuildRequest

    request = BuildRequest(
        source=args.source,
        cuda=args.cuda,
        cuda_arch=args.cuda_arch,
        jobs=args.jobs,
        portable=args.portable,
        rebuild=args.rebuild,
    )
    result = build_with_progress(ctx, request)
    state = "cached, no rebuild needed" if result.cached else f"built in {result.seconds:.0f} s"
    out.print(f"{result.binary} ({state})")
    if result.smoke is not None:
        out.print(f"smoke test on this machine: passed ({result.smoke.summary()})")
    if not result.cached:
        out.print(f"build log: {result.log}")
    return 0


def cmd_which(args: argparse.Namespace) -> int:
    ctx = _load_context()
    manager = ctx.server_manager()
    found = manager.binary()
    caps = manager.capabilities(found.path)
    from server.build import build_info, smoke_records_dir
    from server.smoke import SmokeRecords, SmokeResult, smoke_test_sync

    records = SmokeRecords(smoke_records_dir(ctx.paths.server_dirs().builds))
    smoke: SmokeResult | None
    if args.smoke:
        smoke = smoke_test_sync(found.path, ctx.paths.server_dirs().model_dirs, ctx.paths.logs / "smoke.log", caps=caps)
        records.write(found.path, smoke)
    else:
        smoke = records.read(found.path)
    smoke_text = (
        "not run on this machine (run `localagent server which --smoke`)"
        if smoke is None
        else f"passed on this machine ({smoke.summary()})"
        if smoke.passed
        else f"FAILED on this machine: {smoke.failure}"
    )
    summary = {
        "binary": str(found.path),
        "found_via": found.origin,
        **caps.summary(),
        "smoke_test": None if smoke is None else ("passed" if smoke.passed else "failed"),
    }
    info = build_info(found.path)
    summary["patches"] = info.get("patches", []) if info else None
    summary["cuda"] = info.get("cuda") if info else None
    from server.profile_loading import get_profile

    profile = get_profile(ctx.profiles, _profile_name(ctx, None))
    from server.devices import binary_devices, device_choice, visible_gpus

    devices, gpus = binary_devices(found.path), visible_gpus()
    choice = device_choice(profile, devices, gpus)
    summary["devices"] = None if devices is None else [device.label() for device in devices]
    summary["gpus"] = gpus
    summary["serves"] = {"profile": profile.name, "on": choice.serving, "warning": choice.warning}
    if args.json:
        out.print_json(json.dumps(summary))
        return 0
    out.print(f"binary:     {found.path}  (from {found.origin})")
    out.print(f"version:    {caps.version}")
    out.print(f"flavour:    {caps.flavour}")
    out.print(f"DFlash:     {caps.dflash_spec_type or 'not supported'}")
    out.print(f"spec types: {', '.join(caps.spec_types) or 'none'}")
    out.print(f"KV cache:   {', '.join(caps.cache_types)}")
    flags = summary["flags"]
    assert isinstance(flags, dict)
    out.print("flags:      " + ", ".join(f"{name} {'yes' if ok else 'no'}" for name, ok in flags.items()))
    if info is None:
        out.print("patches:    unknown: not built by localagent (per-request speculation is probed when it starts)")
    else:
        out.print(f"patches:    {', '.join(info.get('patches') or []) or 'none'}")
        out.print(f"CUDA:       {escape(str(info.get('cuda') or 'no'))}", soft_wrap=True)
    out.print(f"smoke test: {escape(smoke_text)}", soft_wrap=True)
    offered = "unknown (no --list-devices)" if devices is None else _device_list(devices)
    out.print(f"devices:    {escape(offered)}", soft_wrap=True)
    out.print(f"GPUs here:  {escape(', '.join(gpus) or 'none (nvidia-smi lists none)')}", soft_wrap=True)
    out.print(f"serves:     {profile.name} on {escape(choice.serving)}", soft_wrap=True)
    if choice.warning:
        err.print(escape(choice.warning), soft_wrap=True)
    if smoke is not None and not smoke.passed:
        return 1
    return 0


def _device_list(devices: list[BackendDevice]) -> str:
    return ", ".join(device.label() for device in devices) or "CPU only (no GPU backend in this build)"


def cmd_cmd(args: argparse.Namespace) -> int:
    if args.port is not None and not 1 <= args.port <= 65535:
        raise UsageError(f"--port {args.port} is out of range; use 1-65535")
    ctx = _load_context()
    manager = ctx.server_manager(host=args.host)
    name = _profile_name(ctx, args.profile)
    from server.engines import launched_engine
    from server.errors import BinaryError
    from server.pinned_binary import PINNED_BUILD, UNBUILT_BINARY, pinned_capabilities
    from server.profile_loading import get_profile

    notes: list[str] = []
    binary = None
    if launched_engine(get_profile(manager.profiles, name)) is None:
        try:
            binary = manager.binary().path
        except BinaryError:
            # Nothing built yet: the command for the binary `server build` will make.
            notes.append(
                f"note: no llama-server is built yet; this is the command for the one `localagent server build` "
                f"makes ({PINNED_BUILD}), from its recorded --help"
            )
    if binary is None:
        profile, plan, _models = manager.plan(
            name, port=args.port, fetch=False, caps=pinned_capabilities(), binary=UNBUILT_BINARY
        )
    else:
        profile, plan, _models = manager.plan(name, port=args.port, fetch=False)
        if warning := manager.device_choice(profile, binary).warning:
            notes.append(warning)
    for note in [*notes, *plan.notes]:
        err.print(escape(note), soft_wrap=True)
    out.print(escape(plan.shell()), soft_wrap=True)
    return 0


def cmd_start(args: argparse.Namespace) -> int:
    ctx = _load_context()
    manager = ctx.server_manager(host=args.host)
    manager.allow_no_api_key = args.no_api_key
    port = _parse_port(args.port)
    name = _profile_name(ctx, args.profile)

    def on_state(state: str) -> None:
        label = {"starting": "starting llama-server", "loading": "loading the model"}.get(state)
        if label:
            err.print(f"{label}…")

    try:
        import asyncio

        handle = asyncio.run(manager.start_daemon(name, port=port, on_state=on_state))
    finally:
        for note in manager.notes:
            err.print(escape(note), soft_wrap=True)
    record = handle.record
    if handle.attached:
        out.print(f"attached: a server with this model is already running at {handle.base_url}")
    else:
        assert record is not None
        out.print(
            f"ready: profile {record.profile} at {handle.base_url} (pid {record.server_pid}, n_ctx {record.n_ctx})"
        )
        out.print(f"log: {record.log_path}")
    return 0


def _parse_port(value: str | None) -> int | str | None:
    if value is None or value == "auto":
        return value
    try:
        port = int(value)
    except ValueError:
        raise UsageError(f"--port takes a number or 'auto', not {value!r}") from None
    if not 1 <= port <= 65535:
        raise UsageError(f"--port {port} is out of range; use 1-65535 or 'auto'")
    return port


def cmd_stop(args: argparse.Namespace) -> int:
    ctx = _load_context()
    stopped = ctx.server_manager().stop(args.port)
    if not stopped:
        out.print("no managed server is running")
    for record in stopped:
        out.print(f"stopped {record.profile} on port {record.port}")
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    from localagent.paths import app_paths
    from server.registry import Registry

    # The records alone, found by paths that no setting moves: neither the settings, the profiles
    # nor the manager (and its HTTP client) are needed to read them, and status answers at once.
    records = Registry(app_paths().server_dirs().records).live()
    if args.json:
        out.print_json(json.dumps([r.public_dict() for r in records]))
        return 0
    if not records:
        out.print("no managed server is running")
        return 0
    table = Table("port", "state", "profile", "pid", "uptime", "restarts", "n_ctx", "device", "model")
    now = time.time()
    for record in records:
        uptime = _duration(now - record.process_started_at) if record.process_started_at else "-"
        table.add_row(
            str(record.port),
            record.state,
            record.profile,
            str(record.server_pid or "-"),
            uptime,
            str(record.restarts),
            str(record.n_ctx or "-"),
            record.device or "-",
            Path(record.model).name,
        )
    out.print(table)
    for record in records:
        if record.message:
            out.print(f"port {record.port}: {escape(record.message)}", soft_wrap=True)
        elif record.last_exit and record.restarts:
            out.print(f"port {record.port}: last restart after: {escape(record.last_exit)}", soft_wrap=True)
    return 0


def cmd_logs(args: argparse.Namespace) -> int:
    ctx = _load_context()
    manager = ctx.server_manager()
    records = manager.registry.live()
    if args.port is not None:
        path = manager.log_path(args.port)
    elif len(records) == 1:
        path = Path(records[0].log_path)
    else:
        path = manager.log_path(ctx.settings.server.port)
    if not path.is_file():
        raise UsageError(f"no log at {path}; start a server first (localagent server start)")
    with path.open("r", errors="replace") as handle:
        lines = handle.readlines()
        for line in lines[-args.lines :]:
            out.out(terminal_safe(line.rstrip("\n")), highlight=False)
        if not args.follow:
            return 0
        try:
            while True:
                line = handle.readline()
                if line:
                    out.out(terminal_safe(line.rstrip("\n")), highlight=False)
                else:
                    time.sleep(0.25)
        except KeyboardInterrupt:
            return 0


def cmd_check(args: argparse.Namespace) -> int:
    from localagent.server_check import run_check

    ctx = _load_context()
    import asyncio

    report = asyncio.run(run_check(ctx.server_manager(), args.profile, max_tokens=args.max_tokens))
    for line in report.lines():
        out.print(escape(line), soft_wrap=True)
    if not report.ok:
        raise ServerCheckFailed(report.verdict)
    return 0


class ServerCheckFailed(LocalAgentError):
    exit_code = 1


def cmd_profiles(args: argparse.Namespace) -> int:
    ctx = _load_context()
    # A name is what the person types next: never cut, whatever the terminal's width (the
    # model and the description wrap instead).
    longest = max((len(name) for name in ctx.profiles), default=7)
    table = Table(
        Column("profile", no_wrap=True, min_width=longest),
        "engine",
        Column("model", overflow="fold"),
        "speculation",
        "description",
    )
    for name, profile in sorted(ctx.profiles.items()):
        spec = profile.speculative
        table.add_row(name, profile.engine, profile.model.describe(), spec.type, profile.description)
    out.print(table)
    return 0


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s"


def cmd_plan(args: argparse.Namespace) -> int:
    from localagent.server_plan_command import show_plan

    return show_plan(args, _load_context(), _profile_name)
