"""``localagent monitor [PORT]``: the metrics panel on its own, for any client of a server."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from localagent.errors import UsageError

if TYPE_CHECKING:
    from localagent.context import AppContext
    from tui.monitor.app import MonitoredServer


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "monitor",
        help="watch a server's live tok/s, acceptance, prompt reads and context, whoever its client is",
        description="Watch what a server does for any client (Claude Code, Codex, opencode, an editor): "
        "live generation tok/s, draft acceptance by position, prompt speed and cache reuse, context in "
        "use, and one row per finished request. It reads the server's /metrics and /slots only; q quits "
        "and leaves the server running.",
    )
    target = parser.add_mutually_exclusive_group()
    target.add_argument(
        "port", nargs="?", type=int, help="the managed server's port (default: the one running, if only one is)"
    )
    target.add_argument("--base-url", metavar="URL", help="a llama-server localagent does not manage")
    parser.set_defaults(handler=cmd_monitor)


def cmd_monitor(args: argparse.Namespace) -> int:
    from localagent.context import AppContext
    from server.http import server_root
    from tui.monitor.app import MonitorApp, MonitoredServer

    ctx = AppContext.load()
    if args.base_url:
        from localagent.urls import url_problem

        if problem := url_problem(args.base_url):
            raise UsageError(f"--base-url {args.base_url!r} {problem}")
        root = server_root(args.base_url)
        server = MonitoredServer(root, "external server", api_key=ctx.settings.server.api_key)
    else:
        server = _managed(ctx, args.port)
    return MonitorApp(server).run() or 0


def _managed(ctx: AppContext, port: int | None) -> MonitoredServer:
    from tui.monitor.app import MonitoredServer

    registry = ctx.server_manager().registry
    live = registry.live()
    if port is not None:
        # Among the live records only: one left by a server that died names nothing to watch.
        record = next((r for r in live if r.port == port), None)
        if record is None:
            running = ", ".join(str(r.port) for r in live) or "none"
            raise UsageError(f"no managed server on port {port} (running: {running}); see `localagent server status`")
    elif len(live) == 1:
        record = live[0]
    elif not live:
        raise UsageError(
            "no managed server is running; start one (`localagent server start`), or watch another with --base-url URL"
        )
    else:
        raise UsageError(
            f"several servers run (ports {', '.join(str(r.port) for r in live)}); name one: localagent monitor PORT"
        )
    label = f"{record.profile} on {record.host}:{record.port}" + (f" · {record.device}" if record.device else "")
    watched = record.port
    return MonitoredServer(record.base_url, label, api_key=record.api_key, read_record=lambda: registry.read(watched))
