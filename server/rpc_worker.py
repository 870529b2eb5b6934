"""An RPC worker (llama.cpp's rpc-server): which binary, and the command line that runs it.

A worker lends this machine's devices and memory to a llama-server elsewhere, which then keeps
some of the model's layers here. localagent's builds compile it next to llama-server (see
``server.build``), so the two always speak the same protocol version.
"""

from __future__ import annotations

import os
from pathlib import Path

from server.argv import DEFAULT_HOST, LaunchPlan
from server.rpc_endpoints import DEFAULT_WORKER_PORT, exposure_warning
from tools.program_path import which_absolute

# The worker's CMake target: renamed upstream from rpc-server to ggml-rpc-server.
WORKER_TARGETS = ("ggml-rpc-server", "rpc-server")
WORKER_NAME = "rpc-server"  # its name in the cache, next to llama-server
STAGED_SUFFIX = ".partial"  # a build's output before it passed its smoke test


def find_worker_binary(server_binary: Path) -> Path | None:
    """The worker built with ``server_binary`` (same directory), else one on PATH. A staged server
    (being smoke-tested) goes with the worker staged beside it, and with no other."""
    if server_binary.name.endswith(STAGED_SUFFIX):
        staged = server_binary.parent / f"{WORKER_NAME}{STAGED_SUFFIX}"
        return staged if staged.is_file() and os.access(staged, os.X_OK) else None
    for name in (WORKER_NAME, *WORKER_TARGETS):
        beside = server_binary.parent / name
        if beside.is_file() and os.access(beside, os.X_OK):
            return beside
    for name in WORKER_TARGETS:
        if on_path := which_absolute(name):
            return Path(on_path)
    return None


def worker_plan(
    binary: Path,
    *,
    host: str | None = None,
    port: int | None = None,
    threads: int | None = None,
    cache: bool = False,
) -> LaunchPlan:
    """``rpc-server -H HOST -p PORT [-t N] [-c]``, with a warning for any address but loopback."""
    host = host or DEFAULT_HOST
    port = port or DEFAULT_WORKER_PORT
    argv = [str(binary), "-H", host, "-p", str(port)]
    if threads is not None:
        argv += ["-t", str(threads)]
    if cache:
        argv.append("-c")  # tensors kept on disk here: a restarted server loads faster
    warning = exposure_warning([f"{host}:{port}"], binding=True)
    return LaunchPlan(
        argv=argv, host=host, port=port, notes=[warning] if warning else [], program="rpc-server", readiness="tcp"
    )
