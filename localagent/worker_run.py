"""`localagent server worker`, run: an RPC worker on this machine under a supervisor until Ctrl-C.

Imported only when the command runs (localagent/worker_command.py holds its arguments).
"""

from __future__ import annotations

import argparse
import asyncio
import signal
from collections.abc import Callable
from pathlib import Path

from rich.markup import escape

from localagent.build_progress import build_with_progress
from localagent.console import err, out
from localagent.context import AppContext
from localagent.errors import LocalAgentError, UsageError
from server.argv import LaunchPlan
from server.build import BuildRequest
from server.errors import BinaryError, StartError
from server.ports import port_is_free
from server.rpc_endpoints import EndpointError, parse_endpoint
from server.rpc_worker import find_worker_binary, worker_plan
from server.supervisor import ServerState, Supervisor, SupervisorStatus

WORKER_STARTUP_TIMEOUT = 60.0


class WorkerFailed(LocalAgentError):
    exit_code = 1


def run_worker(args: argparse.Namespace) -> int:
    if not 1 <= args.port <= 65535:
        raise UsageError(f"--port {args.port} is out of range; use 1-65535")
    if args.threads is not None and args.threads < 1:
        raise UsageError(f"--threads {args.threads} must be at least 1")
    try:
        parse_endpoint(f"{args.host}:{args.port}")
    except EndpointError as exc:
        raise UsageError(f"--host {args.host!r} is not an address to listen on ({exc})") from None
    ctx = AppContext.load()
    plan = worker_plan(_worker_binary(ctx), host=args.host, port=args.port, threads=args.threads, cache=args.cache)
    for note in plan.notes:
        err.print(escape(note), soft_wrap=True)
    if not port_is_free(plan.host, plan.port):
        raise UsageError(f"port {plan.port} on {plan.host} is in use (another worker?); choose --port N")
    log_path = ctx.paths.logs / f"rpc-worker-{plan.port}.log"
    return asyncio.run(_serve(plan, log_path))


def _worker_binary(ctx: AppContext) -> Path:
    """The worker next to the llama-server in use; built (with it) when there is none."""
    manager = ctx.server_manager()
    try:
        found = find_worker_binary(manager.binary().path)
    except BinaryError:
        found = None
    if found is not None:
        return found
    err.print("no RPC worker binary yet: building llama-server with its worker…")
    built = find_worker_binary(build_with_progress(ctx, BuildRequest()).binary)
    if built is None:
        raise BinaryError("the build made no rpc-server; see its log (localagent server build --rebuild)")
    return built


async def _serve(plan: LaunchPlan, log_path: Path) -> int:
    supervisor = Supervisor(plan, log_path, startup_timeout=WORKER_STARTUP_TIMEOUT)
    supervisor.subscribe(_report(plan, log_path))
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        loop.add_signal_handler(signum, stop.set)
    try:
        await supervisor.start()
    except StartError as exc:
        raise WorkerFailed(str(exc)) from None
    stopped = asyncio.create_task(stop.wait())
    failed = asyncio.create_task(_until_failed(supervisor))
    await asyncio.wait({stopped, failed}, return_when=asyncio.FIRST_COMPLETED)
    for task in (stopped, failed):
        task.cancel()
    if supervisor.status.state == ServerState.FAILED:
        await supervisor.process.stop()
        raise WorkerFailed(supervisor.status.message)
    await supervisor.stop()
    out.print(f"stopped the RPC worker on {plan.host}:{plan.port}")
    return 0


def _report(plan: LaunchPlan, log_path: Path) -> Callable[[SupervisorStatus], None]:
    announced: set[int] = set()  # each process once: a status can change without a new process

    def report(status: SupervisorStatus) -> None:
        if status.state == ServerState.READY and status.pid is not None and status.pid not in announced:
            announced.add(status.pid)
            out.print(
                f"RPC worker ready on {plan.host}:{plan.port} (pid {status.pid}); log: {log_path}. Ctrl-C stops it",
                soft_wrap=True,
            )
        elif status.state == ServerState.RESTARTING and status.message:
            err.print(escape(status.message), soft_wrap=True)

    return report


async def _until_failed(supervisor: Supervisor) -> None:
    while supervisor.status.state != ServerState.FAILED:
        await asyncio.sleep(0.5)
