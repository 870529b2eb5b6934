"""The context bill: for one task on one server, what each agent sends before any work is done.

For localagent and each installed agent (Claude Code, Codex, opencode), the same task runs
headless, each agent in a fresh workspace of its own holding the same one file, through a
recording proxy in front of the profile's server (localagent.launch's RequestMeter): every model
request is recorded with its prompt tokens and llama-server's timings. The table says, per agent,
the first request's prompt tokens (the first one sent that carries the agent's tools: its real
turn, not a side request such as a title) and the share of one slot's context it leaves for
work, then over the short session: requests, prompt tokens sent, tokens the server actually read
(the rest came from its prompt cache) and seconds of prefill.

    python scripts/context_bill.py --profile tiny-32k --out bill.json

The tiny model cannot do the task; it only makes each agent send what it sends. A profile needs
a context that holds the largest agent's prompt (Claude Code's is about 18k tokens):
`--profile tiny-32k` is made here from the tiny one when asked for and not configured.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import httpx2

from localagent.context import AppContext
from localagent.errors import LocalAgentError
from localagent.launch.agents import AGENTS, AgentEndpoint
from localagent.launch.installed import agent_program, agent_version
from localagent.launch.local_server import LocalServer, start_or_attach
from localagent.launch.prompt_measure import measure_prompt
from localagent.launch.request_meter import MeteredRequest, RequestMeter
from localagent.version import package_version
from server.http import auth_headers
from server.telemetry import MetricsSnapshot, parse_metrics

TASK = "Read calc.py and add a docstring to its add function. Keep the rest as it is."
# Gemma 3 270M was trained on 32k tokens: enough for Claude Code's own prompt, on a CPU.
TINY_32K = {"extends": "tiny-baseline", "ctx_size": 32768, "description": "Gemma 3 270M with a 32k context"}


@dataclass
class Bill:
    agent: str
    version: str
    requests: int
    first_prompt_tokens: int | None
    context_tokens: int | None
    session_prompt_tokens: int
    session_tokens_read: int | None  # prefilled, after the server's prompt cache
    prefill_seconds: float | None
    wall_seconds: float
    exit_code: int | None
    note: str = ""

    @property
    def share_left(self) -> float | None:
        if not self.first_prompt_tokens or not self.context_tokens:
            return None
        return max(0.0, 1 - self.first_prompt_tokens / self.context_tokens)


def _workspace() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="context-bill-"))
    (folder / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    return folder


# Each answer is cut at this many tokens, by each agent's own setting: a model that cannot do the
# task would otherwise write until the context is full, and the bill is about what is sent.
MAX_OUTPUT = 256
# Agents whose answers can be capped that way run the whole short session; the others are
# measured on their first request only (answered at once by the meter, as `launch` measures), on
# the same task in the same kind of workspace.
SESSION_AGENTS = ("localagent", "claude")


def _argv_and_env(name: str, meter: RequestMeter, server: LocalServer, task: str) -> tuple[list[str], dict[str, str]]:
    if name == "localagent":
        argv = [sys.executable, "-m", "localagent.cli", "run", "--base-url", f"{meter.base_url}/v1"]
        argv += ["--model", server.model, "--max-turns", "4", task]
        return argv, {**os.environ, "LOCALAGENT_AGENT__MAX_TOKENS": str(MAX_OUTPUT)}
    agent = AGENTS[name]
    endpoint = AgentEndpoint(meter.base_url, server.api_key, server.model, server.context_tokens)
    settings = agent.settings(endpoint)
    task_args = agent.measure_command(task)
    env = settings.environment(os.environ)
    if name == "claude":
        env["CLAUDE_CODE_MAX_OUTPUT_TOKENS"] = str(MAX_OUTPUT)
    return [agent_program(agent), *settings.args, *task_args], env


def measure(name: str, server: LocalServer, task: str, timeout: float) -> Bill:
    version = package_version() if name == "localagent" else agent_version(AGENTS[name], agent_program(AGENTS[name]))
    workspace = _workspace()
    try:
        if name not in SESSION_AGENTS:
            return _first_request_only(name, version, server, task, timeout, workspace)
        return _session(name, version, server, task, timeout, workspace)
    finally:
        shutil.rmtree(workspace, ignore_errors=True)


def _first_request_only(
    name: str, version: str, server: LocalServer, task: str, timeout: float, workspace: Path
) -> Bill:
    agent = AGENTS[name]
    started = time.monotonic()
    first = measure_prompt(agent, agent_program(agent), server, timeout, cwd=workspace, prompt=task)
    wall = time.monotonic() - started
    return Bill(name, version, 1, first, server.context_tokens, first, None, None, wall, 0, "first request only")


def _session(name: str, version: str, server: LocalServer, task: str, timeout: float, workspace: Path) -> Bill:
    before = _counters(server)
    with RequestMeter(server.base_url, api_key=server.api_key, mode="forward") as meter:
        argv, env = _argv_and_env(name, meter, server, task)
        started = time.monotonic()
        note = ""
        try:
            done = subprocess.run(argv, cwd=workspace, env=env, capture_output=True, timeout=timeout, check=False)
            code: int | None = done.returncode
        except subprocess.TimeoutExpired:
            code, note = None, f"stopped after {timeout:.0f} s"
        wall = time.monotonic() - started
        generations = [r for r in meter.requests() if r.protocol is not None]
    bill = _bill(name, version, generations, server.context_tokens, wall, code, note)
    # The server's own counters say what it read and for how long, whatever the protocol (an
    # Anthropic answer carries no timings).
    spent = _counters(server).since(before)
    bill.session_tokens_read = int(spent.prompt_tokens_total)
    bill.prefill_seconds = spent.prompt_seconds_total
    return bill


def _counters(server: LocalServer) -> MetricsSnapshot:
    response = httpx2.get(f"{server.base_url}/metrics", headers=auth_headers(server.api_key), timeout=30)
    response.raise_for_status()
    return parse_metrics(response.text)


def _bill(
    name: str,
    version: str,
    generations: list[MeteredRequest],
    context: int | None,
    wall: float,
    code: int | None,
    note: str,
) -> Bill:
    prompts = [r.prompt_tokens for r in generations if r.prompt_tokens is not None]
    first = _first_request(generations)
    timings = [r.timings for r in generations if r.timings]
    read = sum(int(t.get("prompt_n") or 0) for t in timings) if timings else None
    prefill = sum(float(t.get("prompt_ms") or 0.0) for t in timings) / 1000 if timings else None
    return Bill(
        agent=name,
        version=version,
        requests=len(generations),
        first_prompt_tokens=first.prompt_tokens if first else None,
        context_tokens=context,
        session_prompt_tokens=sum(prompts),
        session_tokens_read=read,
        prefill_seconds=prefill,
        wall_seconds=wall,
        exit_code=code,
        note=note or "; ".join(r.error for r in generations if r.error) or ("" if generations else "no model request"),
    )


def _first_request(generations: list[MeteredRequest]) -> MeteredRequest | None:
    """The first counted request the agent sent that carries its tools; the first one sent when
    none does. The meter lists requests as their answers finished: a short side request (a title,
    a quota check) sent alongside the real turn finishes first."""
    sent = sorted((r for r in generations if r.prompt_tokens is not None), key=lambda r: r.started_at)
    with_tools = [r for r in sent if r.has_tools]
    chosen = with_tools or sent
    return chosen[0] if chosen else None


def table(bills: list[Bill]) -> str:
    def num(value: int | None) -> str:
        return "-" if value is None else f"{value:,}"

    lines = [
        "| agent | version | first request (tokens) | context left for work | requests | prompt tokens sent | "
        "read after cache | prefill s | note |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for bill in bills:
        left = "-" if bill.share_left is None else f"{bill.share_left:.0%} of {bill.context_tokens:,}"
        prefill = "-" if bill.prefill_seconds is None else f"{bill.prefill_seconds:.1f}"
        lines.append(
            f"| {bill.agent} | {bill.version} | {num(bill.first_prompt_tokens)} | {left} | {bill.requests} | "
            f"{num(bill.session_prompt_tokens)} | {num(bill.session_tokens_read)} | {prefill} | {bill.note} |"
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--profile", default="tiny-32k", help="the server profile (default: tiny-32k)")
    parser.add_argument("--task", default=TASK, help="the task every agent is given")
    parser.add_argument(
        "--agents",
        nargs="+",
        default=["localagent", *AGENTS],
        help="agents to measure (those not installed are skipped)",
    )
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds each agent may run")
    parser.add_argument("--out", type=Path, help="also write the figures as JSON here")
    parser.add_argument("--port", type=int, help="the managed server's port (default: the configured one)")
    args = parser.parse_args()

    ctx = AppContext.load()
    if args.port:
        ctx.settings.server.port = args.port
    if args.profile == "tiny-32k" and "tiny-32k" not in ctx.settings.profiles:
        from server.profile_loading import load_profiles

        ctx.profiles = load_profiles({**ctx.settings.profiles, "tiny-32k": TINY_32K})
    server = asyncio.run(start_or_attach(ctx, args.profile))
    print(
        f"server: {server.profile} at {server.base_url}, {server.context_tokens or '?'} tokens per slot",
        file=sys.stderr,
    )
    bills = []
    for name in args.agents:
        if name != "localagent" and name not in AGENTS:
            parser.error(f"unknown agent {name!r}; choose from localagent, {', '.join(AGENTS)}")
        try:
            print(f"{name}: running the task…", file=sys.stderr)
            bills.append(measure(name, server, args.task, args.timeout))
        except LocalAgentError as exc:  # one agent's trouble (not installed, no version) skips only it
            print(f"{name}: skipped: {exc}", file=sys.stderr)
    print(table(bills))
    if args.out:
        args.out.write_text(json.dumps([asdict(b) | {"share_left": b.share_left} for b in bills], indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
