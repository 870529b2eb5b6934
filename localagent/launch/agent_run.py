"""Running the agent on the person's terminal, as a child: localagent waits and then exits with
the agent's exit code. Not exec: this process stays until the agent is done, so whatever it owns
is closed in order, and the server it started stays recorded.

Ctrl-C reaches the agent from the terminal itself (same process group); localagent ignores it
while it waits, since the agent decides what Ctrl-C means (Claude Code's first one only clears
the input). A SIGTERM or SIGHUP sent to localagent is passed on to the agent."""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Callable
from types import FrameType
from typing import Any

_PASSED_ON = (signal.SIGTERM, signal.SIGHUP)


def run_agent(argv: list[str], env: dict[str, str]) -> int:
    """The agent's exit code; 128 + N when signal N ended it, as a shell reports it."""
    process = subprocess.Popen(argv, env=env)
    # Set after the start: a signal ignored before exec would be ignored by the agent too.
    previous: dict[signal.Signals, Callable[[int, FrameType | None], Any] | int | None] = {}
    previous[signal.SIGINT] = signal.signal(signal.SIGINT, _leave_it_to_the_agent)
    for passed_on in _PASSED_ON:
        previous[passed_on] = signal.signal(passed_on, lambda number, _frame: process.send_signal(number))
    try:
        code = process.wait()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return code if code >= 0 else 128 - code


def _leave_it_to_the_agent(_number: int, _frame: FrameType | None) -> None:
    pass
