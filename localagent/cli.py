"""The ``localagent`` command. Every failure the user can cause ends as one line and an exit code:
0 done, 1 error, 2 bad input or configuration, 3 turn or time limit (``localagent run``)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from rich.markup import escape

from agent.errors import AgentError
from localagent.console import err
from localagent.errors import LocalAgentError
from localagent.version import package_version
from server.errors import ProfileError, ServerError

Handler = Callable[[argparse.Namespace], int]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="localagent",
        description="A local coding agent on your own GPU, with a llama-server it manages itself.",
    )
    parser.add_argument("--version", action="version", version=f"localagent {package_version()}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    from localagent import config_commands, doctor_command, mcp_commands, run_command, server_commands
    from localagent.acp import command as acp_command
    from localagent.bench import command as bench_command
    from localagent.tui_command import add_tui_arguments

    server_commands.register(commands)
    run_command.register(commands)
    mcp_commands.register(commands)
    config_commands.register(commands)
    bench_command.register(commands)
    acp_command.register(commands)
    doctor_command.register(commands)
    add_tui_arguments(parser)  # `localagent` with no command opens the TUI
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler: Handler | None = getattr(args, "handler", None)
    if handler is None and args.command is None:
        from localagent.tui_command import cmd_tui

        handler = cmd_tui
    if handler is None:
        parser.print_help()
        sys.exit(0)
    sys.exit(run_handler(handler, args))


def run_handler(handler: Handler, args: argparse.Namespace) -> int:
    try:
        return handler(args)
    except LocalAgentError as exc:
        return _fail(exc, exc.exit_code)
    except AgentError as exc:
        return _fail(exc, getattr(exc, "exit_code", 1))
    except ProfileError as exc:
        return _fail(exc, 2)
    except ServerError as exc:
        return _fail(exc, 1)
    except KeyboardInterrupt:
        err.print("interrupted")
        return 130


def _fail(exc: Exception, code: int) -> int:
    err.print(f"[red]error:[/red] {escape(str(exc))}", soft_wrap=True)
    return code


if __name__ == "__main__":
    main()
