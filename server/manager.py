"""The server manager: from a profile name to a serving llama-server, started or attached to.

Two ways to own a server: ``start_daemon`` leaves a small supervising process behind (the CLI's
``server start``), ``start_in_process`` supervises from the calling process (``localagent run``
and the TUI), so the server goes away with it.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx2

from server.argv import LaunchPlan, ResolvedModels, build_launch_plan
from server.binary import FoundBinary, find_binary
from server.capabilities import Capabilities, read_capabilities
from server.errors import NotRunningError, PortError, ProfileError, StartError
from server.exposure import is_loopback, load_or_create_api_key
from server.models import ModelDirs, gguf_architecture, resolve_models
from server.process import pid_alive, probe_health
from server.profiles import Profile, get_profile
from server.registry import Registry, ServerRecord
from server.supervisor import RestartPolicy, ServerState, Supervisor, SupervisorStatus


@dataclass(frozen=True)
class ServerDirs:
    builds: Path
    work: Path
    models: Path
    cache: Path
    logs: Path
    records: Path

    @property
    def model_dirs(self) -> ModelDirs:
        return ModelDirs(models=self.models, cache=self.cache)


@dataclass
class ServerHandle:
    """A serving llama-server, whoever owns it."""

    base_url: str
    profile: str
    attached: bool  # True when someone else started it
    record: ServerRecord | None = None
    supervisor: Supervisor | None = None
    _on_close: list[Callable[[], None]] = field(default_factory=list)

    @property
    def api_base(self) -> str:
        return f"{self.base_url}/v1"

    async def close(self) -> None:
        """Stop the server if this process owns it; leave attached servers alone."""
        if self.supervisor is not None:
            await self.supervisor.stop()
        for callback in self._on_close:
            callback()


class ServerManager:
    def __init__(
        self,
        dirs: ServerDirs,
        profiles: dict[str, Profile],
        *,
        configured_binary: Path | None = None,
        host: str | None = None,
        port: int | None = None,
        startup_timeout: float = 300.0,
        api_key: str | None = None,
        restart_policy: RestartPolicy = RestartPolicy(),
        allow_no_api_key: bool = False,
    ) -> None:
        self.dirs = dirs
        self.allow_no_api_key = allow_no_api_key
        self.notes: list[str] = []  # warnings for the person, one line each (exposure)
        self.profiles = profiles
        self.configured_binary = configured_binary
        self.host = host
        self.port = port
        self.startup_timeout = startup_timeout
        self.api_key = api_key
        self.restart_policy = restart_policy
        self.registry = Registry(dirs.records)
        self._caps: dict[Path, Capabilities] = {}

    # -- the binary and the plan -------------------------------------------------------------

    def binary(self) -> FoundBinary:
        return find_binary(self.configured_binary, self.dirs.builds)

    def capabilities(self, binary: Path) -> Capabilities:
        if binary not in self._caps:
            self._caps[binary] = read_capabilities(binary)
        return self._caps[binary]

    def plan(
        self,
        profile_name: str,
        *,
        port: int | None = None,
        fetch: bool = True,
        caps: Capabilities | None = None,
        binary: Path | None = None,
    ) -> tuple[Profile, LaunchPlan, ResolvedModels]:
        profile = get_profile(self.profiles, profile_name)
        if binary is None:
            binary = self.binary().path
        caps = caps or self.capabilities(binary)
        models = resolve_models(profile, self.dirs.model_dirs, fetch=fetch)
        plan = build_launch_plan(
            profile, caps, binary, models, host=self.host, port=port or self.port, api_key=self.api_key
        )
        if fetch:
            check_draft_format(profile, caps, models)
        return profile, plan, models

    # -- ports and attaching -------------------------------------------------------------------

    async def existing_server(self, plan: LaunchPlan, models: ResolvedModels) -> ServerHandle | None:
        """A server already serving this model on the port is reused; anything else there is an error."""
        base_url = f"http://{_connect_host(plan.host)}:{plan.port}"
        async with httpx2.AsyncClient() as client:
            health = await probe_health(base_url, client, self.api_key)
            if health.state == "down":
                if port_is_free(plan.host, plan.port):
                    return None
                raise PortError(
                    f"port {plan.port} is held by another program; stop it, choose --port N, or use --port auto"
                )
            served = await served_model_path(base_url, client, self.api_key)
        record = self.registry.read(plan.port)
        if health.state == "foreign" or served is None:
            raise PortError(
                f"port {plan.port} is held by a program that is not llama-server ({health.detail or 'no /props'}); "
                "choose --port N or --port auto"
            )
        if Path(served).resolve() != models.model.resolve():
            raise PortError(
                f"port {plan.port} already serves another model ({served}); stop it "
                "(localagent server stop) or choose --port N / --port auto"
            )
        if health.state == "loading":
            await self._wait_until_serving(base_url)
        profile = record.profile if record else "external"
        return ServerHandle(base_url=base_url, profile=profile, attached=True, record=record)

    async def _wait_until_serving(self, base_url: str) -> None:
        deadline = time.monotonic() + self.startup_timeout
        async with httpx2.AsyncClient() as client:
            while (await probe_health(base_url, client, self.api_key)).state != "ready":
                if time.monotonic() > deadline:
                    raise StartError(f"the server at {base_url} is still loading after {self.startup_timeout:.0f} s")
                await asyncio.sleep(0.25)

    def pick_port(self, requested: int | str | None, host: str) -> int | None:
        """The port to use; None leaves it to the profile, then the default."""
        if requested == "auto":
            return free_port(host)
        if requested is None:
            return self.port
        return int(requested)

    # -- starting ------------------------------------------------------------------------------

    async def start_in_process(
        self,
        profile_name: str,
        *,
        port: int | str | None = None,
        on_status: Callable[[SupervisorStatus], None] | None = None,
    ) -> ServerHandle:
        profile, plan, models = self._plan_for_port(profile_name, port)
        if existing := await self.existing_server(plan, models):
            return existing
        log_path = self.log_path(plan.port)
        supervisor = Supervisor(
            plan, log_path, startup_timeout=self.startup_timeout, policy=self.restart_policy, api_key=self.api_key
        )
        record = self._new_record(profile, plan, models, log_path, owner_pid=os.getpid())

        def publish(status: SupervisorStatus) -> None:
            nonlocal record
            record = record.model_copy(update=_status_fields(status))
            self.registry.write(record)
            if on_status:
                on_status(status)

        supervisor.subscribe(publish)
        try:
            await supervisor.start()
        except BaseException:
            await supervisor.process.stop()
            self.registry.remove(plan.port, owner_pid=os.getpid())
            raise
        record = record.model_copy(update={"n_ctx": await fetch_n_ctx(supervisor.base_url, self.api_key)})
        self.registry.write(record)
        handle = ServerHandle(
            base_url=supervisor.base_url, profile=profile.name, attached=False, record=record, supervisor=supervisor
        )
        handle._on_close.append(lambda: self.registry.remove(plan.port, owner_pid=os.getpid()))
        return handle

    async def start_daemon(
        self,
        profile_name: str,
        *,
        port: int | str | None = None,
        on_state: Callable[[str], None] | None = None,
    ) -> ServerHandle:
        """Start a detached supervisor process and return once its server is ready."""
        profile, plan, models = self._plan_for_port(profile_name, port)
        if existing := await self.existing_server(plan, models):
            return existing
        log_path = self.log_path(plan.port)
        spec = {
            "plan": {
                "argv": plan.argv, "host": plan.host, "port": plan.port, "notes": plan.notes,
                "model_bytes": plan.model_bytes, "env": plan.env,
            },
            "record": self._new_record(profile, plan, models, log_path, owner_pid=0).model_dump(),
            "records_dir": str(self.dirs.records),
            "startup_timeout": self.startup_timeout,
            "api_key": self.api_key,
            "policy": {
                "max_restarts": self.restart_policy.max_restarts,
                "window_s": self.restart_policy.window_s,
                "first_backoff_s": self.restart_policy.first_backoff_s,
                "max_backoff_s": self.restart_policy.max_backoff_s,
            },
        }
        self.dirs.records.mkdir(parents=True, exist_ok=True)
        spec_path = self.dirs.records / f".spec-{plan.port}.json"
        # It holds the API key: private to the user, whatever the umask.
        fd = os.open(spec_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(json.dumps(spec))
        self.registry.remove(plan.port)
        log_path.parent.mkdir(parents=True, exist_ok=True)
        with log_path.open("ab") as log:
            daemon = subprocess.Popen(
                [sys.executable, "-m", "server.daemon", str(spec_path)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,  # survives the terminal closing; `server stop` ends it
                cwd=_package_root(),
            )
        last_state = ""
        deadline = time.monotonic() + self.startup_timeout + 15
        while True:
            record = self.registry.read(plan.port)
            if record is not None and record.state != last_state:
                last_state = record.state
                if on_state:
                    on_state(record.state)
            if record is not None and record.state == ServerState.READY:
                return ServerHandle(base_url=record.base_url, profile=profile.name, attached=False, record=record)
            if record is not None and record.state == ServerState.FAILED:
                raise StartError(record.message)
            if daemon.poll() is not None:
                record = self.registry.read(plan.port)
                message = record.message if record and record.message else f"see {log_path}"
                raise StartError(f"the server supervisor exited: {message}")
            if time.monotonic() > deadline:
                self._terminate(daemon.pid, None)
                raise StartError(f"the server was not ready in time; see {log_path}")
            await asyncio.sleep(0.2)

    def _plan_for_port(self, profile_name: str, port: int | str | None) -> tuple[Profile, LaunchPlan, ResolvedModels]:
        profile = get_profile(self.profiles, profile_name)
        host = self.host or profile.host or "127.0.0.1"
        self._guard_exposure(host)
        chosen = self.pick_port(port, host)
        return self.plan(profile_name, port=chosen)

    def _guard_exposure(self, host: str) -> None:
        if is_loopback(host):
            return
        note = f"warning: listening on {host} exposes the server to your network"
        if self.api_key:
            self.notes.append(f"{note}; requests need your api_key")
        elif self.allow_no_api_key:
            self.notes.append(f"{note} with no API key (--no-api-key): anyone who reaches it can use it")
        else:
            key_file = self.dirs.records.parent / "api-key"
            self.api_key = load_or_create_api_key(key_file)
            self.notes.append(
                f"{note}; requests need the API key in {key_file} (pass --no-api-key to serve without one)"
            )

    def _new_record(
        self, profile: Profile, plan: LaunchPlan, models: ResolvedModels, log_path: Path, owner_pid: int
    ) -> ServerRecord:
        return ServerRecord(
            port=plan.port,
            host=plan.host,
            profile=profile.name,
            model=str(models.model),
            owner_pid=owner_pid,
            log_path=str(log_path),
            argv=plan.argv,
            api_key=self.api_key,
        )

    def log_path(self, port: int) -> Path:
        return self.dirs.logs / f"llama-server-{port}.log"

    # -- stopping ------------------------------------------------------------------------------

    def stop(self, port: int | None = None, timeout: float = 20.0) -> list[ServerRecord]:
        """Stop the managed server on ``port`` (or all of them). Returns what was stopped."""
        records = self.registry.live()
        if port is not None:
            records = [r for r in records if r.port == port]
            if not records:
                raise NotRunningError(f"no managed server on port {port}; see `localagent server status`")
        for record in records:
            self._terminate(record.owner_pid, record.server_pid, timeout)
            self.registry.remove(record.port)
        return records

    @staticmethod
    def _terminate(owner_pid: int, server_pid: int | None, timeout: float = 20.0) -> None:
        import signal

        if owner_pid == os.getpid():
            raise NotRunningError("that server belongs to this process; close it from here")
        # A record can outlive its processes and pids get reused: only signal processes that
        # are still ours.
        owner = owner_pid if _is_ours(owner_pid, ("localagent", "server.daemon")) else None
        server = server_pid if server_pid and _is_ours(server_pid, ("llama-server",)) else None
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


def check_draft_format(profile: Profile, caps: Capabilities, models: ResolvedModels) -> None:
    """Old BeeLlama drafts (architecture dflash-draft) do not load in upstream draft-dflash and
    the reverse; say so before a 20 GB model is loaded only to fail."""
    if profile.speculative.type != "dflash" or models.draft is None or not models.draft.is_file():
        return
    arch = gguf_architecture(models.draft)
    wanted = {"draft-dflash": "dflash", "dflash": "dflash-draft"}.get(caps.dflash_spec_type or "")
    if arch is None or wanted is None or arch == wanted:
        return
    raise ProfileError(
        f"the draft {models.draft.name} is a {arch!r} model, but this binary's --spec-type "
        f"{caps.dflash_spec_type} loads {wanted!r} drafts; use a draft in that format "
        "(old BeeLlama drafts need BeeLlama's conversion script for upstream)"
    )


async def served_model_path(base_url: str, client: httpx2.AsyncClient, api_key: str | None) -> str | None:
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        response = await client.get(f"{base_url}/props", headers=headers, timeout=5.0)
        if response.status_code == 200:
            return response.json().get("model_path")
    except (httpx2.HTTPError, ValueError):
        return None
    return None


async def fetch_n_ctx(base_url: str, api_key: str | None = None) -> int | None:
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        async with httpx2.AsyncClient() as client:
            response = await client.get(f"{base_url}/props", headers=headers, timeout=5.0)
            return int(response.json()["default_generation_settings"]["n_ctx"])
    except (httpx2.HTTPError, ValueError, KeyError, TypeError):
        return None


def port_is_free(host: str, port: int) -> bool:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def free_port(host: str = "127.0.0.1") -> int:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def _connect_host(host: str) -> str:
    return "127.0.0.1" if host in ("0.0.0.0", "::", "") else host


def _status_fields(status: SupervisorStatus) -> dict[str, object]:
    return {
        "state": str(status.state),
        "server_pid": status.pid,
        "restarts": status.restarts,
        "started_at": status.started_at,
        "process_started_at": status.process_started_at,
        "message": status.message,
    }


def _package_root() -> str:
    return str(Path(__file__).resolve().parent.parent)
