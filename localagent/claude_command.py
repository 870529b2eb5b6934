"""``localagent`` run as Claude Code's headless CLI (localagent.claude_cli): one prompt
(``-p``), or a stream of turns and control requests on stdin (``--input-format stream-json``,
localagent.stream_input)."""

from __future__ import annotations

import argparse
import asyncio
import time

from localagent.agent_options import AgentOptions, check_profile
from localagent.claude_cli import agent_options, check_combination, ignored_note, mcp_config_file, prompt_text
from localagent.console import err
from localagent.context import AppContext
from localagent.headless import mode_hint


def cmd_claude(args: argparse.Namespace) -> int:
    started = time.monotonic()
    check_combination(args)
    note = ignored_note(args)
    if note:
        err.print(note, markup=False, highlight=False)
    with mcp_config_file(args.mcp_config) as mcp_file:
        options = agent_options(args, mcp_file)
        options.mode_hint = mode_hint
        ctx = AppContext.load()
        check_profile(ctx, options.profile)
        if args.input_format == "stream-json":
            return asyncio.run(_serve(ctx, options, args))
        from localagent import run_command

        task = prompt_text(args)
        run_args = argparse.Namespace(
            output_format=args.output_format, timeout=None, include_partial_messages=args.include_partial_messages
        )
        return asyncio.run(run_command.run_task(ctx, options, task, run_args, started))


async def _serve(ctx: AppContext, options: AgentOptions, args: argparse.Namespace) -> int:
    """Served until stdin closes; SIGTERM or SIGHUP (the SDK's close of a process still running)
    cancels it, so the running tool is stopped and the server and temporary files go."""
    from localagent.run_command import stop_signals_cancel
    from localagent.stream_input import serve_stream_json

    ask_sdk = args.permission_prompt_tool == "stdio" and args.permission_mode != "dontAsk"
    received: list[int] = []
    with stop_signals_cancel(received):
        try:
            return await serve_stream_json(ctx, options, partial=args.include_partial_messages, ask_sdk=ask_sdk)
        except asyncio.CancelledError:
            if not received:
                raise
            return 128 + received[0]
