"""Measuring an agent's own prompt: its system prompt, tool definitions and whatever it adds to
a first message, in the server's tokens. The agent runs one headless turn against a meter in
``answer`` mode, which counts each model request with the server and answers it at once; the
largest count is the prompt. Once the agent has sent a request that carries its tools (its real
turn, not a side request such as a title) it is done: given a moment to end by itself, then its
whole process group is stopped (an agent may go on, as opencode does when it finds its context
full, and helpers it started may outlive it even when it ends by itself).

Where it runs: in an empty folder of its own, removed afterwards, not in the person's project.
In a project the agent would read its CLAUDE.md or AGENTS.md, its .mcp.json (and start those
servers) and its file tree into the prompt, and run its hooks, all for a turn answered by the
meter; and the figure, cached per agent, version and model (``prompt_cache``), would then stand
for other projects too. Measured in an empty folder it is the agent's own prompt, the same
wherever it runs (the person's own settings in their home folder aside); what a project adds
counts against the room the context check keeps for the work (``context_check.ROOM_FOR_WORK``),
as the task itself does.

A server without llama-server's count routes (vLLM, SGLang, an old llama-server) answers them
404: the run stops at once and ``CountRouteMissing`` says so, so the caller can skip the check."""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from localagent.errors import LocalAgentError
from localagent.launch.agents import MEASURE_PROMPT, Agent, AgentEndpoint
from localagent.launch.local_server import LocalServer
from localagent.launch.request_meter import MeteredRequest, RequestMeter
from tools.process_group import signal_group

# A first run may set itself up (Claude Code, opencode) before its first request.
MEASURE_TIMEOUT_S = 180.0
_STOP_GRACE_S = 3.0
# After its turn was answered, how long an agent may take to end by itself before it is stopped.
_SETTLE_S = 5.0
_POLL_S = 0.05


class MeasureFailed(LocalAgentError):
    exit_code = 1


class CountRouteMissing(MeasureFailed):
    """The server cannot count a prompt: nothing is measured, and nothing is wrong with the agent."""


@dataclass(frozen=True)
class _Run:
    exit_code: int | None  # None: stopped by us (measured, or out of time)
    timed_out: bool
    last_line: str


def measure_prompt(
    agent: Agent,
    program: str,
    server: LocalServer,
    timeout: float = MEASURE_TIMEOUT_S,
    *,
    cwd: Path | None = None,
    prompt: str = MEASURE_PROMPT,
) -> int:
    """The agent's prompt in tokens, measured by running it on ``prompt`` in ``cwd`` (None: an
    empty folder of its own, removed afterwards; see the module's docstring); raises
    MeasureFailed, CountRouteMissing when the server cannot count."""
    with RequestMeter(server.base_url, api_key=server.api_key, mode="answer") as meter, _folder(cwd) as folder:
        # The agent gets no key of the server's: the meter adds it to what it sends on.
        # Nor its context size: an agent that knows it may act on it (compact) before its turn.
        endpoint = AgentEndpoint(meter.base_url, None, server.model)
        settings = agent.settings(endpoint)
        argv = [program, *settings.args, *agent.measure_command(prompt)]
        run = _run_until_measured(argv, settings.environment(os.environ), folder, meter, timeout)
    generations = [r for r in meter.requests() if r.protocol is not None]
    if meter.missing_count_route is not None and not any(r.prompt_tokens is not None for r in generations):
        raise CountRouteMissing(f"the server has no token-count route ({meter.missing_count_route} answered 404)")
    return _largest_prompt(agent, generations, run, timeout)


@contextmanager
def _folder(given: Path | None) -> Iterator[Path]:
    """The folder the measuring run works in: ``given``, or an empty one removed afterwards (the
    agent's whole group is stopped first, so nothing of it writes there any more)."""
    if given is not None:
        yield given
        return
    with tempfile.TemporaryDirectory(prefix="localagent-measure-", ignore_cleanup_errors=True) as folder:
        yield Path(folder)


def _largest_prompt(agent: Agent, requests: list[MeteredRequest], run: _Run, timeout: float) -> int:
    counted = [r.prompt_tokens for r in requests if r.prompt_tokens is not None]
    if counted:
        return max(counted)
    failures = [r.error for r in requests if r.error]
    if failures:
        raise MeasureFailed(f"could not count {agent.name}'s prompt: {failures[0]}")
    if run.timed_out:
        raise MeasureFailed(
            f"{agent.name} sent no model request in {timeout:.0f} s while its prompt was measured "
            "(--no-check skips the measurement)"
        )
    said = f": {run.last_line}" if run.last_line else ""
    raise MeasureFailed(f"{agent.name} exited (code {run.exit_code}) before asking the model anything{said}")


def _run_until_measured(argv: list[str], env: dict[str, str], cwd: Path, meter: RequestMeter, timeout: float) -> _Run:
    """Run the agent headless in ``cwd``, its output kept aside (the terminal is the person's),
    until it exits, has sent its real turn (or one the server cannot count), or runs out of time."""
    with tempfile.TemporaryFile() as output:
        process = subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own group: stopping it stops what it started
        )
        deadline = time.monotonic() + timeout
        try:
            while process.poll() is None and time.monotonic() < deadline and not _done(meter):
                time.sleep(_POLL_S)
            # Answered, most agents end on their own (and leave their files in order): a moment
            # for that. One the server cannot count for would only retry: it stops at once.
            settle = min(deadline, time.monotonic() + _SETTLE_S)
            while process.poll() is None and time.monotonic() < settle and meter.missing_count_route is None:
                time.sleep(_POLL_S)
        finally:
            # Measured, out of time, or interrupted (its own session keeps Ctrl-C from it): it
            # stops, and whatever it started goes with it, even when it ended by itself.
            stopped = process.poll() is None
            _stop(process)
        timed_out = stopped and not _done(meter)
        return _Run(None if stopped else process.returncode, timed_out, _last_line(output))


def _done(meter: RequestMeter) -> bool:
    """It has sent its real turn, or a request the server could not count."""
    if meter.missing_count_route is not None:
        return True
    return any(r.protocol is not None and r.has_tools for r in meter.requests())


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Stop the agent's whole process group, whether the agent still runs or not: SIGTERM, a
    short grace (for the agent to end, or, when it had ended already, for its helpers), SIGKILL."""
    if signal_group(process.pid, signal.SIGTERM):
        if process.poll() is None:
            try:
                process.wait(_STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                pass
        else:
            deadline = time.monotonic() + _STOP_GRACE_S
            while _group_exists(process.pid) and time.monotonic() < deadline:
                time.sleep(_POLL_S)
        # Helpers may outlive it or ignore SIGTERM: the whole group goes (a group already gone is
        # no error: signal_group says so and ignores it).
        signal_group(process.pid, signal.SIGKILL)
    process.wait()


def _group_exists(group_id: int) -> bool:
    try:
        os.killpg(group_id, 0)
    except OSError:  # ProcessLookupError: none of it is left
        return False
    return True


def _last_line(output: IO[bytes]) -> str:
    output.seek(0)
    lines = [line.strip() for line in output.read().decode(errors="replace").splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""
