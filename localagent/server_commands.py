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
from localagent.server_which import cmd_which
from tools.terminal_text import terminal_safe

if TYPE_CHECKING:
    from localagent.context import AppContext


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


def cmd_cmd(args: argparse.Namespace) -> int:
    if args.port is not None and not 1 <= args.port <= 65535:
        raise UsageError(f"--port {args.port} is out of range; use 1-65535")
    ctx = _load_context()
    manager = ctx.server_manager(host=args.host)
    name = ctx.profile_name(args.profile)
    from server.engines import launched_engine
    from server.errors import NothingBuiltError
    from server.pinned_binary import PINNED_BUILD, UNBUILT_BINARY, pinned_capabilities
    from server.profile_loading import get_profile

    notes: list[str] = []
    binary = None
    if launched_engine(get_profile(manager.profiles, name)) is None:
        try:
            binary = manager.binary().path
        except NothingBuiltError:
            # Nothing built yet (a binary the person named and got wrong is another error, said
            # as it is): the command for the binary `server build` will make.
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
    name = ctx.profile_name(args.profile)
    from localagent.server_start import start_in_background_sync

    handle = start_in_background_sync(manager, name, port)
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

    return show_plan(args, _load_context())
