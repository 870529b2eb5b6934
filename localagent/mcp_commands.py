"""``localagent mcp list | tools [SERVER] | approve``, and the MCP options of the commands that run sessions.

Which servers a session starts, and the approval of a repository's own ``.mcp.json``, is
tools.mcp.setup; where localagent keeps the files is ``AppContext.mcp_sources``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path

from rich.markup import escape
from rich.table import Table

from localagent.approval_answer import add_answer_arguments, approval_answer
from localagent.console import err, out
from localagent.context import AppContext
from localagent.errors import UsageError
from tools.mcp import PROJECT_FILE, McpManager, McpSources, load_configs, prepare_mcp
from tools.mcp.approvals import ApprovalRequest, fingerprint
from tools.terminal_text import one_line_safe


def register(commands: argparse._SubParsersAction) -> None:
    mcp = commands.add_parser("mcp", help="list and inspect the configured MCP servers")
    sub = mcp.add_subparsers(dest="mcp_command", metavar="ACTION", required=True)

    listing = sub.add_parser("list", help="start each configured server and show its state and tool count")
    add_config_arguments(listing)
    listing.add_argument("--json", action="store_true", help="print the same as JSON")
    listing.set_defaults(handler=cmd_list)

    tools = sub.add_parser("tools", help="show the tools the servers offer, as the model sees them")
    tools.add_argument("server", nargs="?", help="only this server")
    add_config_arguments(tools)
    tools.add_argument("--json", action="store_true", help="print the same as JSON")
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
    sources = ctx.mcp_sources()
    rows = asyncio.run(_states(ctx, sources, args.mcp_config, args.trust_project_mcp))
    if args.json:
        out.print_json(json.dumps(rows))
        return 0
    if not rows:
        out.print(
            f"no MCP servers configured; add them to {sources.project_file} or {sources.user_file}",
            soft_wrap=True,
        )
        return 0
    table = Table(box=None, pad_edge=False)
    for column in ("NAME", "SOURCE", "TRANSPORT", "STATE", "TOOLS", "DETAIL"):
        table.add_column(column, no_wrap=column != "DETAIL", overflow="fold")
    for row in rows:
        detail = row["error"] or row["target"]
        tools = "-" if row["tool_count"] is None else str(row["tool_count"])
        table.add_row(
            *(
                escape(one_line_safe(str(v)))
                for v in (row["name"], row["source"], row["transport"], row["state"], tools, detail)
            )
        )
    out.print(table)
    return 0


def cmd_tools(args: argparse.Namespace) -> int:
    check_config_argument(args.mcp_config)
    ctx = AppContext.load()
    return asyncio.run(_tools(ctx, ctx.mcp_sources(), args))


def cmd_approve(args: argparse.Namespace) -> int:
    ctx = AppContext.load()
    sources = ctx.mcp_sources()
    _, project, notes = load_configs(sources, None)
    _warn(notes)
    servers = list(project.servers)
    if not servers:
        out.print(f"no servers to approve: {sources.project_file} declares none", soft_wrap=True)
        return 0
    request = ApprovalRequest(ctx.workspace, sources.project_file, tuple(servers), fingerprint(project.raw_servers))
    out.print(f"{sources.project_file} starts these MCP servers:", soft_wrap=True, markup=False)
    for line in request.lines():
        out.print(f"  {one_line_safe(line)}", soft_wrap=True, markup=False)
    approved = approval_answer(args, "Start them whenever localagent runs here?")
    sources.approvals.remember(ctx.workspace, request.fingerprint, approved)
    out.print("approved" if approved else "not approved; they will be skipped")
    return 0


async def _states(
    ctx: AppContext, sources: McpSources, mcp_config: Path | None, trust: bool
) -> list[dict[str, object]]:
    setup = await prepare_mcp(sources, mcp_config, trust=trust)
    _warn([n for n in setup.notes if n.startswith("MCP config")])
    rows: list[dict[str, object]] = []
    by_name = {s.name: s for s in setup.servers}
    async with McpManager(setup.servers, sources.logs_dir, ctx.paths.data / "tool-output" / "mcp") as manager:
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


async def _tools(ctx: AppContext, sources: McpSources, args: argparse.Namespace) -> int:
    setup = await prepare_mcp(sources, args.mcp_config, trust=args.trust_project_mcp)
    _warn([n for n in setup.notes if n.startswith("MCP config")])
    servers = setup.servers
    if args.server is not None:
        known = [s.name for s in setup.servers + setup.held_back]
        if args.server not in known:
            names = ", ".join(known) or "none are configured"
            raise UsageError(f"no MCP server named {args.server!r} ({names})")
        if args.server in {s.name for s in setup.held_back}:
            raise UsageError(
                f"MCP server {args.server!r} comes from {sources.project_file} and is not approved; "
                "run `localagent mcp approve` or pass --trust-project-mcp"
            )
        servers = [s for s in servers if s.name == args.server]
    scratch = ctx.paths.data / "tool-output" / "mcp"
    async with McpManager(servers, sources.logs_dir, scratch) as manager:
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
            out.print(one_line_safe(f"{tool['name']}  {summary}"), soft_wrap=True, markup=False, highlight=False)
        if not listing and not failed:
            out.print("no MCP tools")
    return 1 if failed and args.server is not None else 0


def _warn(notes: list[str]) -> None:
    for note in notes:
        err.print(f"warning: {note}", soft_wrap=True, markup=False, highlight=False)
