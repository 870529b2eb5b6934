"""``localagent`` with no subcommand: start or attach to the server and open the TUI.

Imported by ``localagent/cli.py`` for every command, so Textual is only imported once the TUI is
actually opened.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
from pathlib import Path
from typing import Any

MODES = ["read-only", "ask", "auto-edit", "full-auto"]


def add_tui_arguments(parser: argparse.ArgumentParser) -> None:
    """Top-level flags for the TUI. Their own ``dest`` names keep them apart from the same flags
    of ``localagent run``, so neither overrides the other."""
    endpoint = parser.add_mutually_exclusive_group()
    endpoint.add_argument("--profile", dest="tui_profile", metavar="NAME", help="server profile to start or attach to")
    endpoint.add_argument("--base-url", dest="tui_base_url", metavar="URL", help="use this OpenAI-compatible endpoint instead")
    parser.add_argument("--mode", dest="tui_mode", choices=MODES, help="permission mode (default: agent.mode, ask)")
    parser.add_argument(
        "--sandbox", dest="tui_sandbox", choices=["on", "off"],
        help="bash runs under an OS sandbox (Landlock) in every mode; 'off' is allowed with --mode full-auto",
    )
    parser.add_argument(
        "--mcp-config", dest="tui_mcp_config", type=Path, metavar="FILE", help="more MCP servers, in .mcp.json format"
    )
    parser.add_argument(
        "--trust-project-mcp",
        dest="tui_trust_project_mcp",
        action="store_true",
        help="start the servers of this repository's .mcp.json without asking",
    )
    parser.add_argument("--resume", dest="tui_resume", metavar="ID|last", help="continue a saved session")


def agent_options(args: argparse.Namespace) -> Any:
    from localagent.agent_setup import AgentOptions
    from localagent.mcp_commands import check_config_argument

    check_config_argument(args.tui_mcp_config)
    return AgentOptions(
        profile=args.tui_profile,
        base_url=args.tui_base_url,
        mode=args.tui_mode,
        sandbox=args.tui_sandbox,
        resume=args.tui_resume,
        headless=False,
        mcp_config=args.tui_mcp_config,
        trust_project_mcp=args.tui_trust_project_mcp,
    )


def cmd_tui(args: argparse.Namespace) -> int:
    from localagent.agent_setup import build_agent
    from localagent.context import AppContext

    ctx = AppContext.load()
    if args.tui_profile:
        from server.profiles import get_profile

        get_profile(ctx.profiles, args.tui_profile)  # an unknown profile fails before the screen opens
    if args.tui_base_url:
        from localagent.run_command import check_base_url

        check_base_url(args.tui_base_url)
    options = agent_options(args)
    label = options.base_url or options.profile or ctx.settings.server.base_url or ctx.settings.server.profile
    _log_to_file(ctx.paths.logs / "tui.log")

    from tui.app import LocalAgentApp

    async def factory(on_status: Any) -> Any:
        # The app asks about a repository's own .mcp.json servers with a modal.
        options.approve_project_mcp = app.approve_project_mcp
        return await build_agent(ctx, options, on_status)

    app = LocalAgentApp(factory, label=label)

    async def run() -> None:
        try:
            await app.run_async()
        finally:
            await app.close_runtime()  # in this loop, where the server's tasks live

    asyncio.run(run())
    if app.boot_error is not None:
        raise app.boot_error  # shown by the CLI as one line with its exit code
    return app.return_code or 0


def _log_to_file(path: Path) -> None:
    """Library warnings would otherwise be printed over the screen."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    for existing in list(root.handlers):
        root.removeHandler(existing)
    root.addHandler(handler)
    root.setLevel(logging.WARNING)
    logging.captureWarnings(True)
