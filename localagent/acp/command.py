"""``localagent acp``: speak the Agent Client Protocol on stdin/stdout, for an editor to drive.

stdout carries JSON-RPC and nothing else. A stray line on it (a library's print, a tool's child
process that inherited it) would corrupt the stream, so the protocol gets a private copy of the
descriptor and descriptor 1 itself is pointed at stderr before anything else runs.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from pathlib import Path

from localagent.agent_options import AgentOptions, add_agent_arguments, check_profile, options_from_args
from localagent.errors import UsageError

DEST_PREFIX = "acp_"
# An editor attaches whole files to a prompt: lines far longer than asyncio's 64 KiB default.
LINE_LIMIT = 50 * 1024 * 1024

EPILOG = """\
An editor starts this command and talks to it over stdin/stdout (ACP). Zed, in settings.json:

  "agent_servers": {"localagent": {"type": "custom", "command": "localagent", "args": ["acp"]}}

Toad: toad acp "localagent acp" PROJECT_DIR

The flags are those of `localagent run`; sessions are saved as for the TUI, and an editor
reopens one with session/load. Logs go to acp.log in the log directory, never to stdout.
"""


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "acp",
        help="serve the Agent Client Protocol on stdio (for Zed, Toad and other ACP clients)",
        description="Run localagent as an ACP agent over stdin/stdout.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_agent_arguments(parser, dest_prefix=DEST_PREFIX, resume=False)  # the editor reopens sessions itself
    parser.set_defaults(handler=cmd_acp)


def mode_hint(mode: str) -> str:
    """How a person in an editor picks a mode: the session's mode selector."""
    return f"the editor's session mode {mode}"


def acp_options(args: argparse.Namespace) -> AgentOptions:
    if getattr(args, DEST_PREFIX + "resume") or getattr(args, DEST_PREFIX + "continue_last"):
        raise UsageError("localagent acp reopens sessions when the editor asks (session/load); drop --resume/-c")
    options = options_from_args(args, dest_prefix=DEST_PREFIX, headless=False)
    options.mode_hint = mode_hint
    return options


def cmd_acp(args: argparse.Namespace) -> int:
    from localagent.context import AppContext

    options = acp_options(args)
    ctx = AppContext.load()
    check_profile(ctx, options.profile)  # an unknown profile fails before the editor connects
    _log_to_file(ctx.paths.logs / "acp.log")
    protocol_out = _take_stdout()
    asyncio.run(_serve(options, protocol_out))
    return 0


async def _serve(options: AgentOptions, protocol_out: int) -> None:
    from acp import run_agent
    from acp.stdio import _WritePipeProtocol

    from localagent.acp.agent import LocalAgentAcp

    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=LINE_LIMIT)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    protocol = _WritePipeProtocol()
    transport, _ = await loop.connect_write_pipe(lambda: protocol, os.fdopen(protocol_out, "wb", buffering=0))
    writer = asyncio.StreamWriter(transport, protocol, None, loop)
    agent = LocalAgentAcp(options)
    try:
        # The library's Agent protocol lists every optional method; this agent leaves some to defaults.
        await run_agent(agent, writer, reader)  # type: ignore[arg-type]
    finally:
        await agent.close()


def _take_stdout() -> int:
    """A private descriptor for the protocol; descriptor 1 (and sys.stdout) become stderr."""
    sys.stdout.flush()
    protocol_out = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return protocol_out


def _log_to_file(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    logging.basicConfig(level=logging.INFO, handlers=[handler], force=True)
