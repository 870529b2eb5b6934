"""MCP servers for localagent: where their config lives, approval of a repo's own servers, and
``localagent mcp list | tools [SERVER] | approve``.

Servers come from the user's file (``<config dir>/mcp.json``), the workspace's ``.mcp.json``
and ``--mcp-config FILE``, later ones winning for a shared name. The workspace's servers run
commands the repository chose, so they start only once approved for this repo (remembered in
``<data dir>/mcp-approvals.json``) or with ``--trust-project-mcp``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from dataclasses import dataclass, field
from pathlib import Path

from rich.markup import escape
from rich.table import Table

from localagent.console import err, out
from localagent.approval_answer import add_answer_arguments, approval_answer
from localagent.context import AppContext
from localagent.context import approval_store as shared_approval_store
from localagent.errors import UsageError
from tools.mcp import (
    ApprovalStore,
    AskApproval,
    LoadedConfig,
    McpManager,
    ServerConfig,
    approve_project_servers,
    load_config_file,
    merge,
)
from tools.mcp.approvals import ApprovalRequest, fingerprint

PROJECT_FILE = ".mcp.json"
USER_FILE = "mcp.json"


@dataclass
class McpSetup:
    """What to start, what was held back for approval, and one-line notes for the person."""

    servers: list[ServerConfig] = field(default_factory=list)
    held_back: list[ServerConfig] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def project_file(ctx: AppContext) -> Path:
    return ctx.workspace / PROJECT_FILE


def approval_store(ctx: AppContext) -> ApprovalStore:
    return shared_approval_store(ctx.paths)


def load_configs(ctx: AppContext, mcp_config: Path | None) -> tuple[list[ServerConfig], LoadedConfig, list[str]]:
    """Every configured server, the project file as loaded, and one line per broken file or entry."""
    user = load_config_file(ctx.paths.config / USER_FILE, "user")
    project = load_config_file(project_file(ctx), "project")
    loads = [user, project]
    if mcp_config is not None:
        loads.append(load_config_file(mcp_config.expanduser().resolve(), "cli", required=True))
    notes = [f"MCP config {problem}" for loaded in loads for problem in loaded.problems]
    return merge(loads), project, notes


async def prepare_mcp(
    ctx: AppContext, mcp_config: Path | None, *, trust: bool = False, ask: AskApproval | None = None
) -> McpSetup:
    servers, project, notes = load_configs(ctx, mcp_config)
    allowed, approval_notes = await approve_project_servers(
        servers,
        repo=ctx.workspace,
        config_file=project_file(ctx),
        raw_servers=project.raw_servers,
        store=approval_store(ctx),
        trust=trust,
        ask=ask,
    )
    held_back = [s for s in servers if s not in allowed]
    return McpSetup(allowed, held_back, notes + approval_notes)


async def open_mcp(
    ctx: AppContext,
    mcp_config: Path | None,
    *,
    trust: bool,
    ask: AskApproval | None,
    scratch_dir: Path,
) -> tuple[McpManager | None, list[str]]:
    """The started servers (None when none are configured) and notes; never raises for a bad server."""
    setup = await prepare_mcp(ctx, mcp_config, trust=trust, ask=ask)
    if not setup.servers:
        return None, setup.notes
    manager = McpManager(setup.servers, ctx.paths.logs / "mcp", scratch_dir, cwd=ctx.workspace)
    await manager.start()
    return manager, setup.notes + manager.problems()


# -- the command line ----------------------------------------------------------------------------


def register(commands: argparse._SubParsersAction) -> None:
    mcp = commands.add_parser("mcp", help="list and inspect the configured MCP servers")
    sub = mcp.add_subparsers(dest="mcp_command", metavar="ACTION", required=True)

    listing = sub.add_parser("list", help="start each configured server and show its state and tool count")
    add_config_arguments(listing)
    listing.add_argument("--json", action="store_true")
    listing.set_defaults(handler=cmd_list)

    tools = sub.add_parser("tools", help="show the tools the servers offer, as the model sees them")
    tools.add_argument("server", nargs="?", help="only this server")
    add_config_arguments(tools)
    tools.add_argument("--json", action="store_true")
    tools.set_defaults(handler=cmd_tools)

    approve = sub.add_parser("approve", help=f"approve the servers in this repository's {PROJECT_FILE}")
    add_answer_arguments(approve)
    approve.set_defaults(handler=cmd_approve)


def add_config_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--mcp-config", type=Path, metavar="FILE", help="more MCP servers, in .mcp.json format")
    parser.add_argument(
        "--trust-project-mcp",
        action="store_true",
        help=f"start the servers of this repository's {PROJECT_FILE} without asking",
    )


def check_config_argument(path: Path | None) -> None:
    """A --mcp-config that does not exist is a typo: fail before anything starts."""
    if path is not None and not path.expanduser().is_file():
        raise UsageError(f"--mcp-config {path} does not exist; give the path of a .mcp.json-style file")


def cmd_list(args: argparse.Namespace) -> int:
    check_config_argument(args.mcp_config)
    ctx = AppContext.load()
    rows = asyncio.run(_states(ctx, args.mcp_config, args.trust_project_mcp))
    if args.json:
        out.print_json(json.dumps(rows))
        return 0
    if not rows:
        out.print(
            f"no MCP servers configured; add them to {project_file(ctx)} or {ctx.paths.config / USER_FILE}",
            soft_wrap=True,
        )
        return 0
    table = Table(box=None, pad_edge=False)
    for column in ("NAME", "SOURCE", "TRANSPORT", "STATE", "TOOLS", "DETAIL"):
        table.add_column(column, no_wrap=column != "DETAIL", overflow="fold")
    for row in rows:
        detail = row["error"] or row["target"]
        tools = "-" if row["tool_count"] is None else str(row["tool_count"])
        table.add_row(*(escape(v) for v in (row["name"], row["source"], row["transport"], row["state"], tools, detail)))
    out.print(table)
    return 0


def cmd_tools(args: argparse.Namespace) -> int:
    check_config_argument(args.mcp_config)
    ctx = AppContext.load()
    return asyncio.run(_tools(ctx, args))


def cmd_approve(args: argparse.Namespace) -> int:
    ctx = AppContext.load()
    _, project, notes = load_configs(ctx, None)
    _warn(notes)
    servers = list(project.servers)
    if not servers:
        out.print(f"no servers to approve: {project_file(ctx)} declares none", soft_wrap=True)
        return 0
    request = ApprovalRequest(ctx.workspace, project_file(ctx), tuple(servers), fingerprint(project.raw_servers))
    out.print(f"{project_file(ctx)} starts these MCP servers:", soft_wrap=True, markup=False)
    for line in request.lines():
        out.print(f"  {line}", soft_wrap=True, markup=False)
    approved = approval_answer(args, "Start them whenever localagent runs here?")
    approval_store(ctx).remember(ctx.workspace, request.fingerprint, approved)
    out.print("approved" if approved else "not approved; they will be skipped")
    return 0


async def _states(ctx: AppContext, mcp_config: Path | None, trust: bool) -> list[dict[str, object]]:
    setup = await prepare_mcp(ctx, mcp_config, trust=trust)
    _warn([n for n in setup.notes if n.startswith("MCP config")])
    rows: list[dict[str, object]] = []
    by_name = {s.name: s for s in setup.servers}
    async with McpManager(setup.servers, ctx.paths.logs / "mcp", ctx.paths.data / "tool-output" / "mcp") as manager:
        for state in manager.states():
            config = by_name[state.name]
            rows.append(
                {
                    "name": state.name,
                    "source": state.source,
                    "transport": state.transport,
                    "state": state.state,
                    "tool_count": state.tool_count,
                    "error": state.error,
                    "target": config.target(),
                    "origin": str(config.origin),
                }
            )
    for server in setup.held_back:
        rows.append(
            {
                "name": server.name,
                "source": server.source,
                "transport": server.transport,
                "state": "needs approval",
                "tool_count": None,
                "error": None,
                "target": server.target(),
                "origin": str(server.origin),
            }
        )
    return rows


async def _tools(ctx: AppContext, args: argparse.Namespace) -> int:
    setup = await prepare_mcp(ctx, args.mcp_config, trust=args.trust_project_mcp)
    _warn([n for n in setup.notes if n.startswith("MCP config")])
    servers = setup.servers
    if args.server is not None:
        known = [s.name for s in setup.servers + setup.held_back]
        if args.server not in known:
            names = ", ".join(known) or "none are configured"
            raise UsageError(f"no MCP server named {args.server!r} ({names})")
        if args.server in {s.name for s in setup.held_back}:
            raise UsageError(
                f"MCP server {args.server!r} comes from {project_file(ctx)} and is not approved; "
                "run `localagent mcp approve` or pass --trust-project-mcp"
            )
        servers = [s for s in servers if s.name == args.server]
    scratch = ctx.paths.data / "tool-output" / "mcp"
    async with McpManager(servers, ctx.paths.logs / "mcp", scratch) as manager:
        failed = manager.problems()
        listing = [
            {"name": t.name, "server": t.server_name, "tool": t.remote_name, "description": t.description}
            for t in manager.tools()
        ]
    _warn(failed)
    if args.json:
        out.print_json(json.dumps(listing))
    else:
        for tool in listing:
            summary = str(tool["description"]).strip().splitlines()[0] if tool["description"] else ""
            out.print(f"{tool['name']}  {summary}", soft_wrap=True, markup=False, highlight=False)
        if not listing and not failed:
            out.print("no MCP tools")
    return 1 if failed and args.server is not None else 0


def _warn(notes: list[str]) -> None:
    for note in notes:
        err.print(f"warning: {note}", soft_wrap=True, markup=False, highlight=False)
