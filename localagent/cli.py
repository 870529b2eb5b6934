"""The ``localagent`` command. Every failure the user can cause ends as one line and an exit code:
0 done, 1 error, 2 bad input or configuration, 3 turn or time limit (``localagent run``)."""

from __future__ import annotations

import argparse
import difflib
import importlib
import sys
from collections.abc import Callable, Sequence
from typing import Any

from rich.markup import escape

from agent.errors import AgentError
from localagent.console import err
from localagent.errors import LocalAgentError
from server.errors import ProfileError, ServerError

Handler = Callable[[argparse.Namespace], int]


# Each command's module, imported only when that command is used (or its help is asked for):
# `localagent --version` and `localagent server status` should not pay for the agent, the MCP
# client, openai or Textual. The help line is the module's own (tests/test_cli_startup.py checks).
COMMANDS: dict[str, tuple[str, str]] = {
    "server": ("localagent.server_commands", "build, start, stop and inspect llama-server"),
    "run": ("localagent.run_command", "run one task headless: answer on stdout, progress on stderr"),
    "sessions": ("localagent.run_command", "list saved sessions (this workspace, or --all)"),
    "undo": ("localagent.run_command", "restore the workspace to before the last agent turn"),
    "mcp": ("localagent.mcp_commands", "list and inspect the configured MCP servers"),
    "config": ("localagent.config_commands", "workspace configuration trust"),
    "bench": (
        "localagent.bench.command",
        "benchmark profiles or running servers: tok/s, speedup, acceptance; table, JSON, report, chart",
    ),
    "acp": ("localagent.acp.command", "serve the Agent Client Protocol on stdio (for Zed, Toad and other ACP clients)"),
    "doctor": ("localagent.doctor_command", "which sandbox layer protects commands on this machine, and why"),
    "monitor": (
        "localagent.monitor_command",
        "watch a server's live tok/s, acceptance, prompt reads and context, whoever its client is",
    ),
    "launch": ("localagent.launch.command", "run Claude Code, Codex or opencode on a managed local server"),
}


EXAMPLES = """examples:
  localagent                                   open the TUI (starts the default profile's server)
  localagent "fix the failing test"            open the TUI with that as the first message
  localagent run "add type hints to calc.py"   one task headless: the answer on stdout
  localagent --profile gemma4-31b-dflash       the TUI on Gemma 4 31B with its DFlash draft (GPU)
"""


class _LazyCommands(argparse._SubParsersAction):  # argparse's generic (typeshed only)
    """Subcommands listed by name and help; a command's real parser is built by its module's
    `register` when that command is chosen."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        name = values[0] if values else None
        if name in COMMANDS and name not in _loaded:
            load_command(self, name)
        super().__call__(parser, namespace, values, option_string)


_loaded: set[str] = set()


def load_command(commands: argparse._SubParsersAction, name: str) -> None:
    """Replace the stubs of `name`'s module by the parsers its `register` builds."""
    module_name = COMMANDS[name][0]
    siblings = [other for other, (module, _help) in COMMANDS.items() if module == module_name]
    for other in siblings:
        commands._name_parser_map.pop(other, None)
        _loaded.add(other)
    importlib.import_module(module_name).register(commands)


class _VersionAction(argparse.Action):
    """`--version`, reading the installed version only when asked (importlib.metadata is slow)."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:

        from localagent.version import package_version

        sys.stdout.write(f"localagent {package_version()}\n")
        parser.exit()


class CommandParser(argparse.ArgumentParser):
    """Every localagent parser: no option is taken from an abbreviation of its name (`sessions
    --all` was read as the TUI's `--allowed-tools`). Sub-parsers are made of their parent's class,
    so setting it here reaches every command."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)


def build_parser() -> argparse.ArgumentParser:
    parser = CommandParser(
        prog="localagent",
        description="A local coding agent on your own GPU, with a llama-server it manages itself. "
        "With no command, it opens the TUI in the current directory.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action=_VersionAction, nargs=0, help="show the version and exit")
    parser.register("action", "lazy_parsers", _LazyCommands)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", action="lazy_parsers")
    _loaded.clear()
    for name, (_module, help_text) in COMMANDS.items():
        commands.add_parser(name, help=help_text, add_help=False)
    from localagent.tui_command import add_tui_arguments

    add_tui_arguments(parser)  # `localagent` with no command opens the TUI
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    words = list(sys.argv[1:] if argv is None else argv)
    from localagent.claude_cli import wants_claude_contract

    if wants_claude_contract(words, list(COMMANDS)):
        # Claude Code's headless command line (what the Claude Agent SDK runs): localagent.claude_cli.
        sys.exit(run_handler(cmd_claude_entry, argparse.Namespace(words=words)))
    parser = build_parser()
    args = parser.parse_args(with_first_prompt(words))
    handler: Handler | None = getattr(args, "handler", None)
    if handler is None and args.command is None:
        from localagent.tui_command import cmd_tui

        handler = cmd_tui
    if handler is None:
        parser.print_help()
        sys.exit(0)
    sys.exit(run_handler(handler, args))


def with_first_prompt(words: list[str]) -> list[str]:
    """``localagent "fix the bug" [FLAGS]`` opens the TUI with that prompt as its first message, as
    ``claude "..."`` and ``codex "..."`` do. A first word that is a command, an option, or one
    word close to a command's name (a typo) is left for the parser, which names the commands."""
    if not words or words[0].startswith("-") or words[0] in COMMANDS:
        return words
    first = words[0]
    if " " not in first.strip() and difflib.get_close_matches(first, list(COMMANDS), n=1, cutoff=0.6):
        return words
    return ["--first-prompt", first, *words[1:]]


def cmd_claude_entry(args: argparse.Namespace) -> int:
    from localagent.claude_cli import parse
    from localagent.claude_command import cmd_claude

    return cmd_claude(parse(args.words))


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
