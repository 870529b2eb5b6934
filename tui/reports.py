"""The plain-text reports the chat screen shows: a turn's summary, /server, /mcp.

Kept free of Textual: they read the runtime (typed by ``tui.runtime``) and return text.
"""

from __future__ import annotations

from pathlib import Path

from agent.events import TurnFinished
from tui import formatting
from tui.runtime import TuiAgent, TuiRuntime


def mode_name(agent: TuiAgent) -> str:
    return str(agent.policy.mode)


def turn_summary(event: TurnFinished) -> str:
    return (
        f"{event.reason} · {event.steps} step{'' if event.steps == 1 else 's'} · {formatting.count(event.prompt_tokens)} prompt"
        f" + {formatting.count(event.completion_tokens)} completion tokens"
    )


def server_text(runtime: TuiRuntime | None) -> str:
    if runtime is None:
        return "no server yet"
    lines = [f"endpoint {runtime.base_url}"]
    server = runtime.server
    if server is None:
        lines.append("given with --base-url: not managed by localagent")
    elif server.supervisor is None:
        lines.append(f"profile {server.profile}, attached to a server another localagent process runs")
    else:
        supervisor = server.supervisor
        status = supervisor.status
        lines.append(f"profile {server.profile}: {status.state}, pid {status.pid}, restarts {status.restarts}")
        if status.message:
            lines.append(status.message)
        lines.append(f"log {supervisor.log_path}")
    return "\n".join(lines)


def log_path(runtime: TuiRuntime | None) -> Path | None:
    """The model server's log file, when localagent started that server (here or elsewhere)."""
    server = runtime.server if runtime is not None else None
    if server is None:
        return None
    if server.supervisor is not None:
        return Path(server.supervisor.log_path)
    record = server.record
    return Path(record.log_path) if record is not None and record.log_path else None


def mcp_text(runtime: TuiRuntime | None) -> str:
    """MCP servers and their state, as the runtime's MCP manager reports them."""
    manager = runtime.mcp if runtime is not None else None
    states = manager.states() if manager is not None else []
    if not states:
        return "no MCP servers are running (configure them in .mcp.json or pass --mcp-config)"
    lines = []
    for state in states:
        where = ", ".join(str(part) for part in (state.transport, state.source) if part)
        line = f"{state.name}{f' ({where})' if where else ''}: {state.state}, {state.tool_count} tools"
        if state.error:
            line += f" - {state.error}"
        if state.log_path:
            line += f"\n  log {state.log_path}"
        lines.append(line)
    return "\n".join(lines)
