"""A binary proves itself on the machine that runs it before it is used.

A green build on one machine says nothing about the next: a native build may use instructions
this CPU or kernel refuses, and a copied binary may miss its libraries. The smoke test serves
three small models with the binary's default threading (the multi-threaded compute path is
where CPU-specific kernels run), generates tokens, and stops the server:

- the generated tiny target alone (f16 weights, the plain CPU path),
- the same target with its layers on the RPC worker built with the binary, where there is one
  (the worker started on loopback: the path ``localagent server worker`` takes),
- the generated target with its echo DFlash draft (the speculative path), where the binary
  has DFlash,
- the packaged Gemma 3 270M Q4_K_M (quantized weights: the repacked and AMX kernels).

The result is stored per binary (path, size, mtime) and per machine (machine id + CPU flags), so a
home directory shared between machines keeps one answer for each.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import httpx2

from server.argv import build_launch_plan
from server.capabilities import Capabilities, read_capabilities
from server.cpu import machine_id
from server.errors import ServerError, StartError
from server.models import ModelDirs, resolve_models
from server.ports import free_port
from server.process import ServerProcess
from server.profiles import BUILTIN_PROFILES, Profile, Speculative
from server.rpc_worker import find_worker_binary, worker_plan

SMOKE_CTX = 1024
SMOKE_TOKENS = 16
SMOKE_PROMPT = "def reverse(s):\n    return"


@dataclass(frozen=True)
class SmokeCheck:
    name: str
    ok: bool
    detail: str
    tokens: int = 0
    drafted: int = 0
    seconds: float = 0.0


@dataclass(frozen=True)
class SmokeResult:
    binary: str
    machine: str
    at: float
    checks: list[SmokeCheck] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return bool(self.checks) and all(check.ok for check in self.checks)

    @property
    def failure(self) -> str:
        failed = [check for check in self.checks if not check.ok]
        return "; ".join(f"{check.name}: {check.detail}" for check in failed)

    def summary(self) -> str:
        parts = [f"{c.name} {'ok' if c.ok else 'FAILED'}" for c in self.checks]
        return ", ".join(parts)


def smoke_profiles(caps: Capabilities) -> list[Profile]:
    """The three cases, threads left to the binary (all cores)."""
    dflash = BUILTIN_PROFILES["tiny-dflash"]
    target = dflash.model_copy(
        update={"name": "smoke-target", "threads": None, "ctx_size": SMOKE_CTX, "speculative": Speculative()}
    )
    cases = [target]
    if caps.dflash_spec_type is not None:
        spec = dflash.speculative.model_copy(update={"draft_threads": None})
        cases.append(
            dflash.model_copy(
                update={"name": "smoke-dflash", "threads": None, "ctx_size": SMOKE_CTX, "speculative": spec}
            )
        )
    quantized = BUILTIN_PROFILES["tiny-baseline"].model_copy(
        update={"name": "smoke-quantized", "ctx_size": SMOKE_CTX, "swa_full": False, "threads": None}
    )
    cases.append(quantized)
    return cases


async def _run_rpc_case(
    target: Profile, caps: Capabilities, binary: Path, dirs: ModelDirs, log_path: Path, timeout: float
) -> SmokeCheck | None:
    """The target served with its layers on a loopback worker; None when there is no worker."""
    worker_binary = find_worker_binary(binary)
    if worker_binary is None or worker_binary.parent != binary.parent or not caps.has("--rpc"):
        return None
    plan = worker_plan(worker_binary, port=free_port())
    worker = ServerProcess(plan, log_path)
    try:
        await worker.spawn()
        await worker.wait_ready(30.0)
    except StartError as exc:
        await worker.stop(grace=5.0)
        return SmokeCheck("smoke-rpc", False, f"the RPC worker did not start: {str(exc).splitlines()[0]}")
    profile = target.model_copy(
        update={"name": "smoke-rpc", "rpc_workers": [f"{plan.host}:{plan.port}"], "gpu_layers": "all"}
    )
    try:
        check = await _run_case(profile, caps, binary, dirs, log_path, timeout)
    finally:
        worker_clean = await worker.stop(grace=5.0)
    if check.ok and not worker_clean:
        return SmokeCheck("smoke-rpc", False, "the RPC worker did not stop within 5 s of SIGTERM", check.tokens)
    return check


async def _run_case(
    profile: Profile, caps: Capabilities, binary: Path, dirs: ModelDirs, log_path: Path, timeout: float
) -> SmokeCheck:
    started = time.monotonic()
    try:
        models = resolve_models(profile, dirs)
        plan = build_launch_plan(profile, caps, binary, models, host="127.0.0.1", port=free_port())
    except ServerError as exc:
        return SmokeCheck(profile.name, False, f"cannot plan: {exc}")
    process = ServerProcess(plan, log_path)
    try:
        await process.spawn()
        await process.wait_ready(timeout)
        async with httpx2.AsyncClient(timeout=httpx2.Timeout(10.0, read=timeout)) as client:
            response = await client.post(
                f"{process.base_url}/completion",
                json={"prompt": SMOKE_PROMPT, "n_predict": SMOKE_TOKENS, "temperature": 0.0, "seed": 1},
            )
            response.raise_for_status()
            body = response.json()
    except StartError as exc:
        await process.stop(grace=5.0)
        return SmokeCheck(profile.name, False, str(exc).splitlines()[0], seconds=time.monotonic() - started)
    except (httpx2.HTTPError, ValueError) as exc:
        await process.stop(grace=5.0)
        code = process.returncode  # a crash mid-request, or our own SIGTERM just now
        if code not in (None, 0, -15):
            why = process.exit_reason(code, while_loading=False).headline
        else:
            why = f"the request failed: {type(exc).__name__}: {exc}"
        return SmokeCheck(profile.name, False, f"{why} (during generation)", seconds=time.monotonic() - started)
    timings = body.get("timings") or {}
    tokens = int(timings.get("predicted_n") or body.get("tokens_predicted") or 0)
    drafted = int(timings.get("draft_n") or 0)
    clean = await process.stop(grace=10.0)
    seconds = time.monotonic() - started
    code = process.returncode
    if tokens == 0:
        return SmokeCheck(profile.name, False, "generated no tokens", seconds=seconds)
    if profile.speculative.enabled and drafted == 0:
        return SmokeCheck(profile.name, False, "speculation on, but nothing was drafted", tokens, seconds=seconds)
    if not clean:
        return SmokeCheck(profile.name, False, "did not stop within 10 s of SIGTERM", tokens, drafted, seconds)
    if code not in (0, -15):
        why = process.exit_reason(code, while_loading=False).headline
        return SmokeCheck(profile.name, False, f"{why} (while stopping)", tokens, drafted, seconds)
    return SmokeCheck(profile.name, True, f"{tokens} tokens", tokens, drafted, seconds)


async def run_smoke_test(
    binary: Path,
    dirs: ModelDirs,
    log_path: Path,
    *,
    timeout: float = 120.0,
    caps: Capabilities | None = None,
    on_case: Callable[[str], None] | None = None,
) -> SmokeResult:
    """Run every case one after another (two CPU-bound servers at once would starve each other)."""
    result = SmokeResult(binary=str(binary), machine=machine_id(), at=time.time())
    try:
        caps = caps or read_capabilities(binary)
    except ServerError as exc:
        result.checks.append(SmokeCheck("--help", False, str(exc)))
        return result
    for profile in smoke_profiles(caps):
        if on_case:
            on_case(profile.name)
        check = await _run_case(profile, caps, binary, dirs, log_path, timeout)
        result.checks.append(check)
        if not check.ok:
            break  # the first failure is the one to read; the rest would repeat it
        if profile.name == "smoke-target":
            if on_case:
                on_case("smoke-rpc")
            rpc = await _run_rpc_case(profile, caps, binary, dirs, log_path, timeout)
            if rpc is not None:
                result.checks.append(rpc)
                if not rpc.ok:
                    break
    return result


class SmokeRecords:
    """Smoke results on disk, one file per (binary file, machine)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def _path(self, binary: Path) -> Path | None:
        try:
            real = binary.resolve()
            stat = real.stat()
        except OSError:
            return None
        ident = f"{real}:{stat.st_size}:{stat.st_mtime_ns}:{machine_id()}"
        return self.root / f"{hashlib.sha256(ident.encode()).hexdigest()[:20]}.json"

    def read(self, binary: Path) -> SmokeResult | None:
        path = self._path(binary)
        if path is None:
            return None
        try:
            data = json.loads(path.read_text())
            checks = [SmokeCheck(**check) for check in data.pop("checks")]
            return SmokeResult(**data, checks=checks)
        except (OSError, ValueError, TypeError, KeyError):
            return None

    def passed(self, binary: Path) -> bool:
        result = self.read(binary)
        return result is not None and result.passed

    def write(self, binary: Path, result: SmokeResult) -> None:
        path = self._path(binary)
        if path is None:
            return
        self.root.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(".partial")
        partial.write_text(json.dumps(asdict(result), indent=2))
        os.replace(partial, path)


def smoke_test_sync(binary: Path, dirs: ModelDirs, log_path: Path, **kwargs: object) -> SmokeResult:
    return asyncio.run(run_smoke_test(binary, dirs, log_path, **kwargs))  # type: ignore[arg-type]  # keyword options passed through unchanged
