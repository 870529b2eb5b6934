"""The detached supervisor behind `localagent server start`: ``python -m server.daemon SPEC``.

It owns one llama-server, restarts it when it dies, keeps its registry record current, and on
SIGTERM stops it and removes the record. llama-server dies with it (PDEATHSIG) if it is killed.
The manager writes the SPEC file (``write_spec``) and starts it (``spawn``).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

from server.argv import LaunchPlan
from server.errors import StartError
from server.props import fetch_n_ctx
from server.registry import Registry, ServerRecord
from server.supervisor import RestartPolicy, ServerState, Supervisor, SupervisorStatus


def write_spec(
    path: Path,
    plan: LaunchPlan,
    record: ServerRecord,
    *,
    startup_timeout: float,
    api_key: str | None,
    policy: RestartPolicy,
) -> None:
    """Everything the daemon needs to run ``plan``, for ``spawn`` to hand over."""
    spec = {
        "plan": asdict(plan),
        "record": record.model_dump(),
        "records_dir": str(path.parent),
        "startup_timeout": startup_timeout,
        "api_key": api_key,
        "policy": asdict(policy),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    # It holds the API key: private to the user, whatever the umask.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(json.dumps(spec))


def spawn(spec_path: Path, log_path: Path) -> subprocess.Popen[bytes]:
    """Start the daemon for ``spec_path`` in its own session, its output appended to ``log_path``."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("ab") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "server.daemon", str(spec_path)],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,  # survives the terminal closing; `server stop` ends it
            cwd=str(Path(__file__).resolve().parent.parent),
        )


async def run(spec_path: Path) -> int:
    spec = json.loads(spec_path.read_text())
    spec_path.unlink(missing_ok=True)  # it may hold an api key
    plan = LaunchPlan(**spec["plan"])
    registry = Registry(Path(spec["records_dir"]))
    record = ServerRecord.model_validate({**spec["record"], "owner_pid": os.getpid()})
    supervisor = Supervisor(
        plan,
        Path(record.log_path),
        startup_timeout=float(spec["startup_timeout"]),
        policy=RestartPolicy(**spec["policy"]),
        api_key=spec.get("api_key"),
    )
    stop_requested = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        loop.add_signal_handler(signum, stop_requested.set)

    def publish(status: SupervisorStatus) -> None:
        nonlocal record
        record = record.with_status(status)
        if status.state == ServerState.READY:
            # n_ctx is filled in below, after /props answers; keep the record "not ready" until then.
            return
        registry.write(record)

    supervisor.subscribe(publish)
    try:
        await supervisor.start()
    except StartError as exc:
        registry.write(record.model_copy(update={"state": "failed", "message": str(exc)}))
        return 1

    async def mark_ready() -> None:
        nonlocal record
        record = record.model_copy(update={"n_ctx": await fetch_n_ctx(supervisor.base_url, record.api_key)})
        registry.write(record)

    marking: set[asyncio.Future[None]] = set()  # held until done: the loop keeps only weak references

    def on_change(status: SupervisorStatus) -> None:
        if status.state == ServerState.READY:
            task = asyncio.ensure_future(mark_ready())
            marking.add(task)
            task.add_done_callback(marking.discard)

    supervisor.subscribe(on_change)
    failed = asyncio.create_task(_wait_failed(supervisor))
    stopped = asyncio.create_task(stop_requested.wait())
    await asyncio.wait({failed, stopped}, return_when=asyncio.FIRST_COMPLETED)
    if stopped.done():
        await supervisor.stop()
        registry.remove(record.port, owner_pid=os.getpid())
        return 0
    registry.write(record)  # the failed state and its message stay for `server status`
    return 1


async def _wait_failed(supervisor: Supervisor) -> None:
    while supervisor.status.state != ServerState.FAILED:
        await asyncio.sleep(0.5)


def main() -> None:
    sys.exit(asyncio.run(run(Path(sys.argv[1]))))


if __name__ == "__main__":
    main()
