"""Measuring an agent's own prompt: its system prompt, tool definitions and whatever it adds to
a first message, in the server's tokens. The agent runs one headless turn against a meter in
``answer`` mode, which counts each model request with the server and answers it at once; the
largest count is the prompt. Once the agent has sent a request that carries its tools (its real
turn, not a side request such as a title) it is done: given a moment to end by itself, then stopped
(an agent may go on, as opencode does when it finds its context full)."""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from typing import IO

from localagent.errors import LocalAgentError
from localagent.launch.agents import Agent, AgentEndpoint
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


@dataclass(frozen=True)
class _Run:
    exit_code: int | None  # None: stopped by us (measured, or out of time)
    timed_out: bool
    last_line: str


def measure_prompt(agent: Agent, program: str, server: LocalServer, timeout: float = MEASURE_TIMEOUT_S) -> int:
    """The agent's prompt in tokens, measured by running it; raises MeasureFailed."""
    with RequestMeter(server.base_url, api_key=server.api_key, mode="answer") as meter:
        # The agent gets no key of the server's: the meter adds it to what it sends on.
        # Nor its context size: an agent that knows it may act on it (compact) before its turn.
        endpoint = AgentEndpoint(meter.base_url, None, server.model)
        settings = agent.settings(endpoint)
        argv = [program, *settings.args, *agent.measure_args]
        run = _run_until_measured(argv, settings.environment(os.environ), meter, timeout)
    return _largest_prompt(agent, [r for r in meter.requests() if r.protocol is not None], run, timeout)


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


def _run_until_measured(argv: list[str], env: dict[str, str], meter: RequestMeter, timeout: float) -> _Run:
    """Run the agent headless, its output kept aside (the terminal is the person's), until it
    exits, has sent its real turn, or runs out of time."""
    with tempfile.TemporaryFile() as output:
        process = subprocess.Popen(
            argv,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own group: stopping it stops what it started
        )
        deadline = time.monotonic() + timeout
        try:
            while process.poll() is None and time.monotonic() < deadline and not _sent_its_turn(meter):
                time.sleep(_POLL_S)
            # Answered, most agents end on their own (and leave their files in order): a moment for that.
            settle = min(deadline, time.monotonic() + _SETTLE_S)
            while process.poll() is None and time.monotonic() < settle:
                time.sleep(_POLL_S)
        finally:
            # Measured, out of time, or interrupted (its own session keeps Ctrl-C from it): it stops.
            stopped = process.poll() is None
            if stopped:
                _stop(process)
        timed_out = stopped and not _sent_its_turn(meter)
        return _Run(None if stopped else process.returncode, timed_out, _last_line(output))


def _sent_its_turn(meter: RequestMeter) -> bool:
    return any(r.protocol is not None and r.has_tools for r in meter.requests())


def _stop(process: subprocess.Popen[bytes]) -> None:
    signal_group(process.pid, signal.SIGTERM)
    try:
        process.wait(_STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        pass
    # Helpers it started may outlive it or ignore SIGTERM: the whole group goes.
    signal_group(process.pid, signal.SIGKILL)
    process.wait()


def _last_line(output: IO[bytes]) -> str:
    output.seek(0)
    lines = [line.strip() for line in output.read().decode(errors="replace").splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""
