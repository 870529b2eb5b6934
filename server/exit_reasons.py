"""Why a llama-server process ended, in words a person can act on.

A negative exit code from asyncio/subprocess means "killed by that signal"; the signal says more
about the cause than the log does (a SIGILL'd process writes nothing), so each one is named with
its likely cause and the fix.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass
from pathlib import Path

# What a llama-server without the RPC backend says when a profile gives it workers.
NO_RPC_BACKEND = "RPC not supported in this build"


@dataclass(frozen=True)
class ExitReason:
    code: int | None
    signal_name: str | None
    cause: str  # one sentence: what most likely happened and what to do
    program: str = "llama-server"

    @property
    def headline(self) -> str:
        if self.signal_name:
            return f"{self.program} was killed by {self.signal_name}: {self.cause}"
        return f"{self.program} exited with code {self.code}" + (f": {self.cause}" if self.cause else "")


def signal_name(code: int | None) -> str | None:
    if code is None or code >= 0:
        return None
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


def mem_available_bytes() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _gib(size: int) -> str:
    return f"{size / 2**30:.1f} GiB"


def explain_exit(
    code: int | None,
    *,
    while_loading: bool,
    model_bytes: int | None = None,
    free_bytes: int | None = None,
    program: str = "llama-server",
    silent_workers: list[str] | None = None,
    log_tail: list[str] | None = None,
) -> ExitReason:
    """Name the signal (or the exit code) with its likely cause and the fix."""
    name = signal_name(code)
    if silent_workers:
        return ExitReason(code, name, _workers_gone(silent_workers, while_loading), program)
    if any(NO_RPC_BACKEND in line for line in log_tail or ()):
        cause = (
            "this llama-server was built without the RPC backend, so it cannot use the profile's rpc_workers; "
            "run `localagent server build` (RPC is on in its builds) or rebuild yours with -DGGML_RPC=ON"
        )
        return ExitReason(code, name, cause, program)
    if name == "SIGILL":
        cause = (
            "an illegal instruction: this binary was built for another CPU (or uses an instruction "
            "set this machine or its kernel does not allow); run `localagent server build --rebuild`"
        )
    elif name == "SIGKILL" and while_loading:
        sizes = []
        if model_bytes:
            sizes.append(f"the model files are {_gib(model_bytes)}")
        if free_bytes is not None:
            sizes.append(f"{_gib(free_bytes)} of memory is available now")
        detail = f" ({', '.join(sizes)})" if sizes else ""
        cause = (
            f"most likely out of memory while loading{detail}; use a smaller model or context "
            "(ctx_size), offload fewer layers, or close other programs"
        )
    elif name == "SIGKILL":
        cause = "something killed it (the kernel's out-of-memory killer, or a user); see the log's last lines"
    elif name in ("SIGSEGV", "SIGABRT", "SIGBUS", "SIGFPE"):
        cause = "it crashed; the log's last lines say where"
    elif name in ("SIGTERM", "SIGINT", "SIGHUP"):
        cause = "it was asked to stop by another program"
    elif name is not None:
        cause = "see the log's last lines"
    elif code == 0:
        cause = "" if not while_loading else "it stopped on its own before serving; see the log's last lines"
    else:
        cause = "see the log's last lines" if while_loading else ""
    return ExitReason(code, name, cause, program)


def worker_command(endpoint: str) -> str:
    """The command that starts the worker ``endpoint`` names, on its machine."""
    host, _, port = endpoint.rpartition(":")
    local = host in ("127.0.0.1", "localhost")
    return f"localagent server worker --port {port}" + ("" if local else f" --host {host}")


def _workers_gone(workers: list[str], while_loading: bool) -> str:
    names = ", ".join(workers)
    verb = "is" if len(workers) == 1 else "are"
    start = " ".join(f"`{worker_command(worker)}`" for worker in workers)
    when = "not answering" if while_loading else "no longer answering"
    return (
        f"RPC worker {names} {verb} {when}; start {'it' if len(workers) == 1 else 'them'} again ({start}) "
        "or take it out of the profile's rpc_workers"
    )
