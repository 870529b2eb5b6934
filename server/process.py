"""One llama-server process: spawn it, wait until it serves, stop it."""

from __future__ import annotations

import asyncio
import ctypes
import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from server.argv import LaunchPlan
from server.errors import NotRunningError, StartError
from server.exit_reasons import ExitReason, explain_exit, mem_available_bytes
from server.http import auth_headers, tail_lines
from server.pid_state import pid_alive
from server.ports import local_base_url
from server.rpc_connections import connected_workers, resolve_workers
from server.rpc_endpoints import silent_workers, tcp_accepts

if TYPE_CHECKING:
    # The HTTP client is loaded with the first probe: reading records (`server status`) needs none.
    import httpx2

_PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """Runs in the child before exec: the kernel kills it when its parent goes away, so a killed
    localagent never leaves a llama-server holding the GPU."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except OSError:
        pass  # not Linux: the supervisor's own stop path still applies


@dataclass(frozen=True)
class Health:
    state: str  # "down", "loading", "ready", "foreign"
    detail: str = ""


async def probe_health(base_url: str, client: httpx2.AsyncClient, api_key: str | None = None) -> Health:
    try:
        response = await client.get(f"{base_url}/health", headers=auth_headers(api_key), timeout=5.0)
    except httpx2_module().TransportError:
        return Health("down")
    if response.status_code == 503:
        return Health("loading")
    if response.status_code == 200:
        try:
            if response.json().get("status") == "ok":
                return Health("ready")
        except ValueError:
            pass
    return Health("foreign", f"HTTP {response.status_code} from /health")


async def probe_plan(plan: LaunchPlan, client: httpx2.AsyncClient, api_key: str | None = None) -> Health:
    """Whether what ``plan`` runs serves, by its own kind of answer (``LaunchPlan.readiness``)."""
    base_url = local_base_url(plan.host, plan.port)
    if plan.readiness == "tcp":
        answers = await asyncio.to_thread(tcp_accepts, plan.host, plan.port, 0.5)
        return Health("ready" if answers else "down")
    health = await probe_health(base_url, client, api_key)
    if plan.readiness == "http" and health.state == "foreign" and health.detail == "HTTP 200 from /health":
        return Health("ready")  # vLLM and SGLang answer 200 with no JSON status
    return health


class ServerProcess:
    def __init__(self, plan: LaunchPlan, log_path: Path, api_key: str | None = None) -> None:
        self.plan = plan
        self.log_path = log_path
        self.api_key = api_key
        self._proc: asyncio.subprocess.Process | None = None
        self.started_at: float | None = None
        # RPC workers the serving process was connected to, then was not (see server.rpc_connections).
        self.lost_workers: set[str] = set()
        self._worker_watch: asyncio.Task[None] | None = None

    @property
    def base_url(self) -> str:
        return local_base_url(self.plan.host, self.plan.port)

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.returncode is None

    async def spawn(self) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = self.log_path.open("ab")
        log.write(f"\n=== localagent: starting {self.plan.shell()}\n".encode())
        log.flush()
        try:
            self._proc = await asyncio.create_subprocess_exec(
                *self.plan.argv,
                env={**os.environ, **self.plan.env} if self.plan.env else None,
                cwd=self.plan.cwd,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                preexec_fn=die_with_parent,
            )
        except OSError as exc:
            raise StartError(f"cannot start {self.plan.argv[0]}: {exc}") from None
        finally:
            log.close()
        self.started_at = time.time()

    async def wait_ready(self, timeout: float, on_state: Callable[[str], None] | None = None) -> None:
        """Return once /health says ok. Early exit and timeout raise StartError with the log's tail."""
        deadline = time.monotonic() + timeout
        last_state = ""
        async with httpx2_module().AsyncClient() as client:
            while True:
                if not self.running:
                    code = self._proc.returncode if self._proc else None
                    reason = self.exit_reason(code, while_loading=True)
                    raise StartError(self.failure(f"{reason.headline} (while starting)"))
                health = await probe_plan(self.plan, client, self.api_key)
                state = "starting" if health.state == "down" else health.state
                if state != last_state:
                    last_state = state
                    if on_state:
                        on_state(state)
                if health.state == "ready":
                    if self.plan.rpc_workers and self._worker_watch is None:
                        self._worker_watch = asyncio.create_task(self._watch_workers(), name="rpc-worker-watch")
                    return
                if time.monotonic() > deadline:
                    await self.stop()
                    raise StartError(self.failure(f"{self.plan.program} was not ready after {timeout:.0f} s"))
                await asyncio.sleep(0.2)

    async def _watch_workers(self, every_s: float = 0.25) -> None:
        """While it serves, which workers the server holds a connection to: one that drops out is
        the worker that went, even when it is back (restarted) by the time the server has died."""
        assert self._proc is not None
        pid, workers = self._proc.pid, self.plan.rpc_workers
        try:
            resolved = await asyncio.to_thread(resolve_workers, workers)  # once: names rarely move
            held = await asyncio.to_thread(connected_workers, pid, workers, resolved=resolved)
            while self.running:
                await asyncio.sleep(every_s)
                if not self.running:
                    break
                now = await asyncio.to_thread(connected_workers, pid, workers, resolved=resolved)
                # A look taken as the process ended sees every connection gone: it says nothing.
                if self.running and pid_alive(pid):
                    self.lost_workers |= held - now
                    held = now
        except (OSError, ValueError):
            return  # no /proc to read: the probe at exit (silent_workers) is what is left

    async def wait_exit(self) -> int:
        assert self._proc is not None
        return await self._proc.wait()

    def exit_reason(self, code: int | None, *, while_loading: bool) -> ExitReason:
        # A server computing on RPC workers dies with a bare "Remote RPC server crashed" when one
        # goes away: asking each worker is what names the one that went.
        return explain_exit(
            code,
            while_loading=while_loading,
            model_bytes=self.plan.model_bytes,
            free_bytes=mem_available_bytes(),
            program=self.plan.program,
            silent_workers=self._gone_workers(),
            log_tail=tail_lines(self.log_path, 40),
        )

    def _gone_workers(self) -> list[str]:
        silent = set(silent_workers(self.plan.rpc_workers)) | self.lost_workers
        return [worker for worker in self.plan.rpc_workers if worker in silent]

    async def stop(self, grace: float = 10.0) -> bool:
        """SIGTERM, then SIGKILL after ``grace`` seconds. True when it ended on SIGTERM alone."""
        proc = self._proc
        if proc is None or proc.returncode is not None:
            return True
        try:
            proc.send_signal(signal.SIGTERM)
            await asyncio.wait_for(proc.wait(), grace)
            return True
        except ProcessLookupError:
            return True
        except TimeoutError:
            try:
                proc.kill()
            except ProcessLookupError:
                return False
            await proc.wait()
            return False

    @property
    def returncode(self) -> int | None:
        return self._proc.returncode if self._proc else None

    def failure(self, headline: str) -> str:
        lines = tail_lines(self.log_path)
        shown = "\n".join(f"  {line}" for line in lines)
        return f"{headline}. Last log lines:\n{shown}\nFull log: {self.log_path}"


def terminate(owner_pid: int, server_pid: int | None, timeout: float = 20.0, program: str = "llama-server") -> None:
    """Stop a recorded server from outside: SIGTERM its supervising process, wait up to ``timeout``
    seconds for both to end, then SIGKILL what is left. ``program``: what the server's command line
    holds (the record's argv[0] name: llama-server, vllm, python3 for SGLang)."""
    if owner_pid == os.getpid():
        raise NotRunningError("that server belongs to this process; close it from here")
    # A record can outlive its processes and pids get reused: only signal processes that
    # are still ours.
    owner = owner_pid if _is_ours(owner_pid, ("localagent", "server.daemon")) else None
    server = server_pid if server_pid and _is_ours(server_pid, (program,)) else None
    if owner is not None:
        try:
            os.kill(owner, signal.SIGTERM)
        except ProcessLookupError:
            owner = None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(p is not None and pid_alive(p) for p in (owner, server)):
        time.sleep(0.1)
    for pid in (server, owner):
        if pid is not None and pid_alive(pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def _is_ours(pid: int, markers: tuple[str, ...]) -> bool:
    if not pid_alive(pid):
        return False
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return True  # no /proc: trust the record
    return any(marker in cmdline for marker in markers)


def httpx2_module() -> ModuleType:
    import httpx2

    return httpx2
