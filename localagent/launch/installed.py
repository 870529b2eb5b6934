"""Whether an agent is installed here, and which version: only installed agents run, and the
measured prompt is cached per version (a new version may bring a longer prompt)."""

from __future__ import annotations

import re
import subprocess

from localagent.errors import LocalAgentError
from localagent.launch.agents import Agent
from tools.program_path import which_absolute

VERSION_TIMEOUT_S = 30.0
_VERSION = re.compile(r"\d+(?:\.\d+)+(?:[-+][0-9A-Za-z.]+)?")


class AgentNotInstalled(LocalAgentError):
    """The agent's program is not on PATH: a setup the person fixes, like bad configuration."""

    exit_code = 2


def agent_program(agent: Agent) -> str:
    """The agent's executable on PATH (its absolute entries only, as for every program localagent
    runs); raises AgentNotInstalled with the install command."""
    found = which_absolute(agent.executable)
    if found is None:
        raise AgentNotInstalled(f"{agent.executable} is not installed (not on PATH); install it with: {agent.install}")
    return found


def agent_version(agent: Agent, program: str) -> str:
    """The version the agent reports (``2.1.3`` from ``2.1.3 (Claude Code)``); its whole first
    line when that holds no version number."""
    try:
        done = subprocess.run(
            [program, *agent.version_args], capture_output=True, text=True, timeout=VERSION_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise LocalAgentError(f"{program} {' '.join(agent.version_args)} did not answer: {exc}") from None
    text = (done.stdout.strip() or done.stderr.strip()).splitlines()
    if done.returncode != 0 or not text:
        raise LocalAgentError(f"{program} {' '.join(agent.version_args)} failed (exit code {done.returncode})")
    match = _VERSION.search(text[0])
    return match.group(0) if match else text[0].strip()
