"""The server manager: from a profile name to a serving llama-server, started or attached to.

Two ways to own a server: ``start_daemon`` leaves a small supervising process behind (the CLI's
``server start``), ``start_in_process`` supervises from the calling process (``localagent run``
and the TUI), so the server goes away with it.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx2

from server import daemon
from server.argv import LaunchPlan, ResolvedModels, build_launch_plan
from server.binary import FoundBinary, find_binary
from server.build import build_info
from server.capabilities import Capabilities, read_capabilities
from server.defaults import STARTUP_TIMEOUT_S
from server.devices import BackendDevice, DeviceChoice, binary_devices, device_choice, visible_gpus
from server.dirs import ServerDirs
from server.engines import engine_model, engine_plan, launched_engine, require_engine
from server.errors import NotRunningError, PortError, StartError
from server.exposure import is_loopback, load_or_create_api_key
from server.models import check_draft_format, resolve_models
from server.ports import free_port, local_base_url, port_is_free
from server.process import probe_health, terminate
from server.profile_loading import get_profile
from server.profiles import Profile
from server.props import fetch_n_ctx, served_model_ids, served_model_path
from server.registry import Registry, ServerRecord
from server.rpc_endpoints import RPC_WARNING_START
from server.supervisor import RestartPolicy, ServerState, Supervisor, SupervisorStatus

# vLLM and SGLang fetch the model before they listen: a first start may take hours.
ENGINE_STARTUP_TIMEOUT = 3 * 3600.0


@dataclass
class ServerHandle:
    """A serving llama-server, whoever owns it."""

    base_url: str
    profile: str
    attached: bool  # True when someone else started it
    record: ServerRecord | None = None
    supervisor: Supervisor | None = None
    notes: list[str] = field(default_factory=list)  # what starting it warned of, one line each
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
        startup_timeout: float = STARTUP_TIMEOUT_S,
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
        self._devices: dict[Path, list[BackendDevice] | None] = {}
        self._gpus: list[str] | None = None

    # -- the binary and the plan -------------------------------------------------------------

    def binary(self) -> FoundBinary:
        return find_binary(self.configured_binary, self.dirs.builds)

    def capabilities(self, binary: Path) -> Capabilities:
        if binary not in self._caps:
            self._caps[binary] = read_capabilities(binary)
        return self._caps[binary]

    def devices_here(self, binary: Path) -> tuple[list[BackendDevice] | None, list[str]]:
        """What `binary` can offload to, and the GPUs nvidia-smi lists; asked once per manager."""
        if binary not in self._devices:
            self._devices[binary] = binary_devices(binary)
        if self._gpus is None:
            self._gpus = visible_gpus()
        return self._devices[binary], self._gpus

    def device_choice(self, profile: Profile, binary: Path) -> DeviceChoice:
        """Which device `binary` serves `profile` on here, and the warning when that is a trap."""
        devices, gpus = self.devices_here(binary)
        info = build_info(binary)
        return device_choice(profile, devices, gpus, cuda_build=bool(info and info.get("cuda")))

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
        if launched_engine(profile) is not None:
            return profile, self._engine_plan(profile, port, fetch), ResolvedModels(model=Path(engine_model(profile)))
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

    def _engine_plan(self, profile: Profile, port: int | None, for_start: bool) -> LaunchPlan:
        """vLLM or SGLang: the printed command, or (to start it) the one that runs here."""
        launcher = require_engine(profile) if for_start else None
        return engine_plan(profile, host=self.host, port=port or self.port, api_key=self.api_key, launcher=launcher)

    def startup_timeout_for(self, plan: LaunchPlan) -> float:
        """vLLM and SGLang download the model before they listen (tens of GB on a first start)."""
        return max(self.startup_timeout, ENGINE_STARTUP_TIMEOUT) if plan.readiness == "http" else self.startup_timeout

    # -- ports and attaching -------------------------------------------------------------------

    async def existing_server(self, plan: LaunchPlan, models: ResolvedModels) -> ServerHandle | None:
        """A server already serving this model on the port is reused; anything else there is an error."""
        base_url = local_base_url(plan.host, plan.port)
        if plan.readiness == "http":
            return await self._existing_engine(plan, models)
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

    async def _existing_engine(self, plan: LaunchPlan, models: ResolvedModels) -> ServerHandle | None:
        """vLLM or SGLang on the port: attached to when it serves the profile's model."""
        if port_is_free(plan.host, plan.port):
            return None
        base_url = local_base_url(plan.host, plan.port)
        served = await served_model_ids(base_url, self.api_key)
        if str(models.model) not in served:
            what = f"serves {', '.join(served)}" if served else "does not list the model"
            raise PortError(
                f"port {plan.port} is held by a server that {what}; stop it or choose --port N / --port auto"
            )
        record = self.registry.read(plan.port)
        return ServerHandle(
            base_url=base_url, profile=record.profile if record else "external", attached=True, record=record
        )

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
        launch = await self._launch_or_attach(profile_name, port)
        if isinstance(launch, ServerHandle):
            return launch
        profile, plan, log_path = launch.profile, launch.plan, launch.log_path
        supervisor = Supervisor(
            plan,
            log_path,
            startup_timeout=self.startup_timeout_for(plan),
            policy=self.restart_policy,
            api_key=self.api_key,
        )
        record = launch.record(owner_pid=os.getpid())

        def publish(status: SupervisorStatus) -> None:
            nonlocal record
            record = record.with_status(status)
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
            base_url=supervisor.base_url,
            profile=profile.name,
            attached=False,
            record=record,
            supervisor=supervisor,
            notes=list(self.notes),
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
        launch = await self._launch_or_attach(profile_name, port)
        if isinstance(launch, ServerHandle):
            return launch
        spec_path = self.dirs.records / f".spec-{launch.plan.port}.json"
        daemon.write_spec(
            spec_path,
            launch.plan,
            launch.record(owner_pid=0),
            startup_timeout=self.startup_timeout_for(launch.plan),
            api_key=self.api_key,
            policy=self.restart_policy,
        )
        self.registry.remove(launch.plan.port)
        process = daemon.spawn(spec_path, launch.log_path)
        return await self._wait_for_daemon(process, launch, on_state)

    async def _wait_for_daemon(
        self, process: subprocess.Popen[bytes], launch: _Launch, on_state: Callable[[str], None] | None
    ) -> ServerHandle:
        """Follow the daemon's record until its server is ready; its failure, exit or silence raises."""
        port, log_path = launch.plan.port, launch.log_path
        last_state = ""
        deadline = time.monotonic() + self.startup_timeout_for(launch.plan) + 15
        while True:
            record = self.registry.read(port)
            if record is not None and record.state != last_state:
                last_state = record.state
                if on_state:
                    on_state(record.state)
            if record is not None and record.state == ServerState.READY:
                profile = launch.profile.name
                return ServerHandle(
                    base_url=record.base_url, profile=profile, attached=False, record=record, notes=list(self.notes)
                )
            if record is not None and record.state == ServerState.FAILED:
                raise StartError(record.message)
            if process.poll() is not None:
                record = self.registry.read(port)
                message = record.message if record and record.message else f"see {log_path}"
                raise StartError(f"the server supervisor exited: {message}")
            if time.monotonic() > deadline:
                terminate(process.pid, None)
                raise StartError(f"the server was not ready in time; see {log_path}")
            await asyncio.sleep(0.2)

    async def _launch_or_attach(self, profile_name: str, port: int | str | None) -> _Launch | ServerHandle:
        """What to start for ``profile_name``, or the server already serving it on that port."""
        profile, plan, models = self._plan_for_port(profile_name, port)
        if existing := await self.existing_server(plan, models):
            existing.notes.extend(self.notes)
            return existing
        device = await self._device_for(profile, plan)
        return _Launch(profile, plan, models, self.log_path(plan.port), api_key=self.api_key, device=device)

    def _plan_for_port(self, profile_name: str, port: int | str | None) -> tuple[Profile, LaunchPlan, ResolvedModels]:
        profile = get_profile(self.profiles, profile_name)
        host = self.host or profile.host or "127.0.0.1"
        self._guard_exposure(host)
        chosen = self.pick_port(port, host)
        planned = self.plan(profile_name, port=chosen)
        # Said where the server starts too, not only by `server cmd` (the rest of the plan's notes
        # are said by _guard_exposure in its own words).
        self.notes.extend(note for note in planned[1].notes if note.startswith(RPC_WARNING_START))
        return planned

    async def _device_for(self, profile: Profile, plan: LaunchPlan) -> str:
        """The device the record names; its warning joins the notes said where the server starts."""
        if plan.readiness == "http":  # vLLM and SGLang choose their own GPUs
            return "GPU" if profile.tensor_parallel else ""
        # Off the event loop: asking a CUDA build for its devices initialises CUDA (seconds), and
        # the TUI starts its server from a worker on its own loop.
        choice = await asyncio.to_thread(self.device_choice, profile, Path(plan.argv[0]))
        if choice.warning:
            self.notes.append(choice.warning)
        return choice.serving

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
            program = Path(record.argv[0]).name if record.argv else "llama-server"
            terminate(record.owner_pid, record.server_pid, timeout, program=program)
            self.registry.remove(record.port)
        return records


@dataclass(frozen=True)
class _Launch:
    """A server about to be started: its plan, and the record that will describe it."""

    profile: Profile
    plan: LaunchPlan
    models: ResolvedModels
    log_path: Path
    api_key: str | None
    device: str = ""

    def record(self, owner_pid: int) -> ServerRecord:
        return ServerRecord(
            port=self.plan.port,
            host=self.plan.host,
            profile=self.profile.name,
            model=str(self.models.model),
            owner_pid=owner_pid,
            log_path=str(self.log_path),
            argv=self.plan.argv,
            api_key=self.api_key,
            device=self.device,
        )
