"""``localagent run PROMPT|FILE|-`` (headless), ``localagent sessions`` and ``localagent undo``."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import math
import signal
import sys
import time
from collections.abc import Iterator

from agent.errors import AgentError
from localagent.agent_options import (
    AgentOptions,
    add_agent_arguments,
    check_profile,
    options_from_args,
)
from localagent.agent_setup import AgentRuntime, build_agent, session_store
from localagent.console import err, out
from localagent.context import AppContext
from localagent.errors import LocalAgentError, UsageError
from localagent.headless import HeadlessRunner, mode_hint
from localagent.stream_json import MCP_STATUS, SessionInfo, failure_result, json_line
from localagent.task_input import read_task
from server.errors import ServerError
from tools.terminal_text import one_line_safe

# What the CLI reports as one line with an exit code (see localagent.cli.run_handler).
STARTUP_FAILURES = (LocalAgentError, AgentError, ServerError)


def register(commands: argparse._SubParsersAction) -> None:
    run = commands.add_parser(
        "run",
        help="run one task headless: answer on stdout, progress on stderr",
        description="Exit codes: 0 done, 1 error, 2 bad input or configuration, 3 turn or time limit.",
    )
    run.add_argument(
        "task",
        metavar="PROMPT|FILE|-",
        help="the prompt itself, a task file (Markdown or text), or - to read the task from standard input;"
        " with a prompt, text piped to standard input is attached after it as context",
    )
    run.add_argument(
        "--output-format",
        choices=["text", "json", "stream-json"],
        default="text",
        help="text: the answer; json: Claude Code's result object; stream-json: Claude Code's messages, one per line",
    )
    run.add_argument(
        "--include-partial-messages",
        action="store_true",
        help="with --output-format stream-json: each token as a stream_event line too",
    )
    run.add_argument("--max-turns", type=int, help="most model steps before stopping (exit 3)")
    run.add_argument("--timeout", type=float, help="seconds before stopping (exit 3)")
    add_agent_arguments(run, headless=True)
    run.set_defaults(handler=cmd_run)

    sessions = commands.add_parser("sessions", help="list saved sessions (this workspace, or --all)")
    sessions.add_argument("--all", action="store_true", help="sessions of every workspace")
    sessions.set_defaults(handler=cmd_sessions)

    undo = commands.add_parser("undo", help="restore the workspace to before the last agent turn")
    undo.add_argument("--session", default="last", help="session id (default: the last in this workspace)")
    undo.set_defaults(handler=cmd_undo)


def cmd_run(args: argparse.Namespace) -> int:
    started = time.monotonic()
    with _result_on_failure(args.output_format, started):
        if args.include_partial_messages and args.output_format != "stream-json":
            raise UsageError("--include-partial-messages goes with --output-format stream-json")
        if args.max_turns is not None and args.max_turns < 1:
            raise UsageError("--max-turns must be at least 1")
        if args.timeout is not None and not (math.isfinite(args.timeout) and args.timeout > 0):
            raise UsageError(f"--timeout {args.timeout} must be a positive number of seconds")
        options = options_from_args(args, headless=True, max_steps=args.max_turns)
        options.mode_hint = mode_hint
        task = read_task(args.task)
        ctx = AppContext.load()
        check_profile(ctx, options.profile)  # an unknown profile fails before anything starts
    return asyncio.run(run_task(ctx, options, task, args, started))


@contextlib.contextmanager
def _result_on_failure(output_format: str, started: float) -> Iterator[None]:
    """A run that fails before the agent starts still ends json and stream-json output with a
    result (is_error, the one-line error); the error itself still goes to stderr, by the CLI."""
    try:
        yield
    except STARTUP_FAILURES as exc:
        if output_format != "text":
            result = failure_result(str(exc), duration_s=time.monotonic() - started)
            sys.stdout.write(json_line(result))
            sys.stdout.flush()
        raise


async def run_task(ctx: AppContext, options: AgentOptions, task: str, args: argparse.Namespace, started: float) -> int:
    with _result_on_failure(args.output_format, started):
        runtime = await build_agent(ctx, options)
    for note in runtime.notes:
        err.print(f"warning: {note}", soft_wrap=True, markup=False, highlight=False)
    received: list[int] = []
    with stop_signals_cancel(received):
        try:
            runner = HeadlessRunner(
                runtime.agent,
                args.output_format,
                info=session_info(ctx, runtime),
                partial=args.include_partial_messages,
            )
            runner.summary.session_id = runtime.session_id
            summary = await runner.run(task, args.timeout)
        except asyncio.CancelledError:
            if not received:
                raise  # Ctrl-C: asyncio.run turns it into KeyboardInterrupt
            err.print(f"stopped by {signal.Signals(received[0]).name}; the turn is saved as cancelled")
            return 128 + received[0]
        finally:
            await runtime.close()
    err.print(f"session {runtime.session_id}", highlight=False)
    return summary.exit_code


def session_info(ctx: AppContext, runtime: AgentRuntime) -> SessionInfo:
    """What stream-json's init message says: the session, its model, tools and MCP servers."""
    servers = runtime.mcp.states() if runtime.mcp is not None else []
    return SessionInfo(
        session_id=runtime.session_id,
        cwd=str(ctx.workspace),
        model=runtime.model,
        tools=list(runtime.agent.tools),
        mcp_servers=[{"name": s.name, "status": MCP_STATUS.get(s.state, s.state)} for s in servers],
        mode=str(runtime.agent.policy.mode),
    )


@contextlib.contextmanager
def stop_signals_cancel(received: list[int]) -> Iterator[None]:
    """SIGTERM and SIGHUP (the terminal closed) stop a run as Ctrl-C does: the task is cancelled,
    so the running tool's process group is killed and the turn is recorded, instead of the
    process dying at once and leaving the command running in the workspace."""
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    assert task is not None

    def stop(signum: int) -> None:
        received.append(signum)
        task.cancel()

    for signum in (signal.SIGTERM, signal.SIGHUP):
        loop.add_signal_handler(signum, stop, signum)
    try:
        yield
    finally:
        for signum in (signal.SIGTERM, signal.SIGHUP):
            loop.remove_signal_handler(signum)


def cmd_sessions(args: argparse.Namespace) -> int:
    from rich.table import Table

    ctx = AppContext.load()
    summaries = session_store(ctx).list(None if args.all else ctx.workspace)
    if not summaries:
        out.print("no saved sessions" + ("" if args.all else " in this workspace (try --all)"))
        return 0
    table = Table("id", "updated", "turns", "first message", *(["workspace"] if args.all else []))
    for summary in summaries:
        row = [
            summary.session_id,
            summary.updated.astimezone().strftime("%Y-%m-%d %H:%M"),
            str(summary.turns),
            one_line_safe((summary.first_user_message or "").splitlines()[0][:60])
            if summary.first_user_message
            else "",
        ]
        table.add_row(*row, *([one_line_safe(summary.workspace)] if args.all else []))
    out.print(table)
    return 0


def cmd_undo(args: argparse.Namespace) -> int:
    from agent.checkpoints import CheckpointStore

    ctx = AppContext.load()
    header, _events = session_store(ctx).open(args.session, workspace=ctx.workspace)
    session_id = header["session_id"]
    checkpoints = CheckpointStore(ctx.workspace, session_id, ctx.paths.data / "checkpoints")
    if checkpoints.notice:
        out.print(checkpoints.notice, markup=False)
    restored = checkpoints.undo_last_turn_sync()
    if restored is None:
        out.print("nothing to undo in this session")
        return 0
    out.print(f"restored the workspace to {one_line_safe(restored.label)}", markup=False)
    return 0
