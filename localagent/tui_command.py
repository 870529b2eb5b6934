"""``localagent`` with no subcommand: start or attach to the server and open the TUI.

Imported by ``localagent/cli.py`` for every command, so Textual (and the agent's assembly) are
only imported once the TUI is actually opened.
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path
from typing import TYPE_CHECKING

from localagent.agent_options import (
    AgentOptions,
    add_agent_arguments,
    check_profile,
    options_from_args,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from server.supervisor import SupervisorStatus
    from tui.runtime import TuiRuntime

# The TUI's flags live on the top-level parser; their own ``dest`` names keep them apart from the
# same flags of ``localagent run``, so neither overrides the other.
DEST_PREFIX = "tui_"


def add_tui_arguments(parser: argparse.ArgumentParser) -> None:
    add_agent_arguments(parser, dest_prefix=DEST_PREFIX)
    # `localagent "fix the bug"` (localagent.cli turns the bare prompt into this): the first message.
    parser.add_argument("--first-prompt", dest=f"{DEST_PREFIX}first_prompt", help=argparse.SUPPRESS)


def agent_options(args: argparse.Namespace) -> AgentOptions:
    from tui.commands import mode_hint

    options = options_from_args(args, dest_prefix=DEST_PREFIX, headless=False)
    options.mode_hint = mode_hint
    return options


def cmd_tui(args: argparse.Namespace) -> int:
    from localagent.agent_setup import build_agent, endpoint_choice
    from localagent.context import AppContext

    ctx = AppContext.load()
    check_profile(ctx, args.tui_profile)  # an unknown profile fails before the screen opens
    options = agent_options(args)
    label = endpoint_choice(ctx, options).label
    _log_to_file(ctx.paths.logs / "tui.log")

    import asyncio

    from tui.app import LocalAgentApp
    from tui.prompt_history import history_file_for

    async def factory(on_status: Callable[[SupervisorStatus], None]) -> TuiRuntime:
        # The app asks about a repository's own .mcp.json servers with a modal.
        options.approve_project_mcp = app.approve_project_mcp
        return await build_agent(ctx, options, on_status)

    app = LocalAgentApp(
        factory,
        label=label,
        history_file=history_file_for(ctx.paths.data, ctx.workspace),
        first_prompt=args.tui_first_prompt,
    )

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
