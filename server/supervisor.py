"""Keep one server process running (llama-server, an RPC worker, an engine): restart it with backoff
when it dies, give up when it keeps dying."""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, replace
from enum import StrEnum
from pathlib import Path

import httpx2

from server.argv import LaunchPlan
from server.defaults import STARTUP_TIMEOUT_S
from server.errors import StartError
from server.http import tail_lines
from server.process import ServerProcess, probe_plan
from server.rpc_endpoints import silent_workers


class ServerState(StrEnum):
    STARTING = "starting"
    LOADING = "loading"
    READY = "ready"
    RESTARTING = "restarting"
    DOWN = "down"
    FAILED = "failed"


@dataclass(frozen=True)
class SupervisorStatus:
    state: ServerState
    pid: int | None = None
    restarts: int = 0
    started_at: float | None = None  # first start; uptime counts from the current process's start
    process_started_at: float | None = None
    message: str = ""
    last_exit: str = ""  # why the process last died; unlike message, kept once it serves again


@dataclass(frozen=True)
class RestartPolicy:
    max_restarts: int = 5
    window_s: float = 300.0
    first_backoff_s: float = 0.5
    max_backoff_s: float = 16.0


StatusListener = Callable[[SupervisorStatus], None]
# How long a restart waits for a server's RPC workers to answer again (a worker machine rebooting).
WORKER_WAIT_S = 300.0


class Supervisor:
    def __init__(
        self,
        plan: LaunchPlan,
        log_path: Path,
        *,
        startup_timeout: float = STARTUP_TIMEOUT_S,
        policy: RestartPolicy = RestartPolicy(),
        api_key: str | None = None,
    ) -> None:
        self.plan = plan
        self.log_path = log_path
        self.startup_timeout = startup_timeout
        self.policy = policy
        self.api_key = api_key
        self.process = ServerProcess(plan, log_path, api_key)
        self.status = SupervisorStatus(ServerState.DOWN)
        self._listeners: list[StatusListener] = []
        self._restart_times: deque[float] = deque()
        self._watch_task: asyncio.Task[None] | None = None
        self._stopping = False

    @property
    def base_url(self) -> str:
        return self.process.base_url

    def subscribe(self, listener: StatusListener) -> None:
        self._listeners.append(listener)
        listener(self.status)

    def _set(self, **changes: object) -> None:
        self.status = replace(self.status, **changes)  # type: ignore[arg-type]  # field names and values come from the caller, checked by dataclasses.replace
        for listener in list(self._listeners):
            listener(self.status)

    async def start(self) -> None:
        """Start the server and return once it serves; then keep watching it in the background."""
        self._stopping = False
        await self._launch(ServerState.STARTING)
        self._set(started_at=self.process.started_at)
        self._watch_task = asyncio.create_task(self._watch(), name=f"{self.plan.program}-watch")

    async def wait_ready(self, timeout: float) -> bool:
        """Wait until the server serves (again, after a restart): READY, its process running and
        /health ok. False once the supervisor has given up (FAILED) or after ``timeout`` seconds.

        A request that just failed may have seen the crash before the supervisor did: its state
        can still say READY for a moment, so the process and /health are checked too."""
        deadline = time.monotonic() + timeout
        async with httpx2.AsyncClient() as client:
            while time.monotonic() < deadline:
                if self.status.state == ServerState.FAILED:
                    return False
                if (
                    self.status.state == ServerState.READY
                    and self.process.running
                    and (await probe_plan(self.plan, client, self.api_key)).state == "ready"
                ):
                    return True
                await asyncio.sleep(0.2)
        return False

    async def stop(self) -> None:
        self._stopping = True
        if self._watch_task is not None:
            self._watch_task.cancel()
            try:
                await self._watch_task
            except asyncio.CancelledError:
                pass
            self._watch_task = None
        await self.process.stop()
        self._set(state=ServerState.DOWN, pid=None, message="stopped")

    async def restart(self) -> None:
        """A restart the user asked for: not counted against the crash budget."""
        await self.stop()
        await self.start()

    async def _launch(self, first_state: ServerState) -> None:
        self.process = ServerProcess(self.plan, self.log_path, self.api_key)
        self._set(state=first_state, pid=None, message="")
        await self.process.spawn()
        self._set(pid=self.process.pid, process_started_at=self.process.started_at)

        def on_state(state: str) -> None:
            if state == "loading":
                self._set(state=ServerState.LOADING)

        await self.process.wait_ready(self.startup_timeout, on_state)
        self._set(state=ServerState.READY, message="")

    async def _wait_for_workers(self) -> None:
        """A server computing on RPC workers cannot start while one is away: wait for it (a while)
        rather than spend the restart budget on starts that must fail."""
        if not self.plan.rpc_workers:
            return
        deadline = time.monotonic() + WORKER_WAIT_S
        while not self._stopping:
            silent = await asyncio.to_thread(silent_workers, self.plan.rpc_workers)
            if not silent or time.monotonic() > deadline:
                return
            message = f"waiting for RPC worker {', '.join(silent)} to answer before restarting"
            if self.status.message != message:
                self._set(message=message)
            await asyncio.sleep(1.0)

    async def _watch(self) -> None:
        while not self._stopping:
            code = await self.process.wait_exit()
            if self._stopping:
                return
            now = time.monotonic()
            while self._restart_times and now - self._restart_times[0] > self.policy.window_s:
                self._restart_times.popleft()
            reason = self.process.exit_reason(code, while_loading=False)
            if len(self._restart_times) >= self.policy.max_restarts:
                last = " | ".join(tail_lines(self.log_path, 3))
                self._set(
                    state=ServerState.FAILED,
                    pid=None,
                    last_exit=reason.headline,
                    message=(
                        f"{self.plan.program} died {len(self._restart_times) + 1} times in "
                        f"{self.policy.window_s / 60:.0f} minutes, last: {reason.headline}; gave up. "
                        f"Last log lines: {last}. See {self.log_path}"
                    ),
                )
                return
            backoff = min(self.policy.first_backoff_s * 2 ** len(self._restart_times), self.policy.max_backoff_s)
            self._restart_times.append(now)
            self._set(
                state=ServerState.RESTARTING,
                pid=None,
                last_exit=reason.headline,
                restarts=self.status.restarts + 1,
                message=f"{reason.headline}; restarting in {backoff:.1f} s",
            )
            await asyncio.sleep(backoff)
            await self._wait_for_workers()
            try:
                await self._launch(ServerState.RESTARTING)
            except StartError as exc:
                # Counted as another death: the loop decides whether to try again.
                self._set(message=str(exc).splitlines()[0], last_exit=str(exc).splitlines()[0])
