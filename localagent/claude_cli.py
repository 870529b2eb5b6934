"""Claude Code's command line on the root command, so programs written for it run on localagent.

``localagent -p PROMPT`` and ``localagent --output-format stream-json --input-format stream-json
...`` (how the Claude Agent SDK starts its CLI: ``ClaudeAgentOptions(cli_path=...)``) run headless
instead of opening the TUI. Every flag the SDK passes is accepted: those with a meaning here are
mapped onto localagent's options (``--permission-mode`` onto its modes, still bounded by the
workspace's trust rules); those without one (budgets, betas, a fallback model, plugins, thinking)
are named once on stderr as ignored. A malformed flag is a one-line error, exit 2.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import NoReturn

from localagent.agent_options import AgentOptions, add_rule_arguments, check_base_url, rule_list
from localagent.errors import UsageError

# Any of these, with no subcommand, asks for Claude Code's headless contract.
TRIGGERS = ("-p", "--print", "--input-format", "--output-format")
# Claude Code's permission modes, by the localagent mode nearest each.
PERMISSION_MODES = {
    "default": "ask",
    "acceptEdits": "auto-edit",
    "plan": "read-only",
    "bypassPermissions": "full-auto",
    "auto": "auto-edit",
    "dontAsk": "ask",  # what would ask is refused, never asked (localagent.claude_command)
}
# Flags with no meaning here: accepted, named once as ignored. (name, takes a value)
IGNORED = (
    ("--max-budget-usd", True),
    ("--task-budget", True),
    ("--fallback-model", True),
    ("--betas", True),
    ("--plugin-dir", True),
    ("--settings", True),
    ("--setting-sources", True),
    ("--add-dir", True),
    ("--resume-session-at", True),
    ("--resume-drops-turn", True),
    ("--thinking", True),
    ("--max-thinking-tokens", True),
    ("--thinking-display", True),
    ("--effort", True),
    ("--json-schema", True),
    ("--agents", True),
    ("--fork-session", False),
    ("--include-hook-events", False),
    ("--session-mirror", False),
    ("--replay-user-messages", False),
)


def wants_claude_contract(argv: Sequence[str], commands: Sequence[str]) -> bool:
    """True for Claude Code's headless command line: no subcommand, and -p or an I/O format."""
    if argv and argv[0] in commands:
        return False
    return any(arg in TRIGGERS or arg.startswith(("--output-format=", "--input-format=")) for arg in argv)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (Claude Code's command line; `localagent --help` for localagent's own)")


def parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="localagent",
        description="Claude Code's headless command line (what the Claude Agent SDK runs); see `localagent run` for ours.",
        allow_abbrev=False,
    )
    p.add_argument("prompt", nargs="?", help="the task (with --input-format text); - or nothing reads standard input")
    p.add_argument("-p", "--print", action="store_true", help="answer and exit (always so here)")
    p.add_argument("--output-format", choices=["text", "json", "stream-json"], default="text")
    p.add_argument("--input-format", choices=["text", "stream-json"], default="text")
    p.add_argument("--verbose", action="store_true", help="accepted: stream-json is always complete here")
    p.add_argument("--include-partial-messages", action="store_true")
    p.add_argument("--system-prompt", help="in place of localagent's own (an empty one keeps ours)")
    p.add_argument("--system-prompt-file", type=Path)
    p.add_argument("--append-system-prompt")
    p.add_argument("--tools", help='built-in tools offered: "default", "" (none) or names, comma-separated')
    add_rule_arguments(p)
    p.add_argument("--max-turns", type=int, help="most model steps per turn")
    p.add_argument("--model", help="the model name requests carry")
    p.add_argument("--permission-mode", choices=sorted(PERMISSION_MODES))
    p.add_argument("--dangerously-skip-permissions", action="store_true", help="--permission-mode bypassPermissions")
    p.add_argument("--permission-prompt-tool", help='"stdio": ask the SDK (can_use_tool) when a call needs approval')
    p.add_argument("-c", "--continue", dest="continue_last", action="store_true")
    p.add_argument("-r", "--resume", nargs="?", const="last", metavar="ID")
    p.add_argument("--session-id")
    p.add_argument("--mcp-config", action="append", default=[], help="a .mcp.json file or its JSON text")
    p.add_argument("--strict-mcp-config", action="store_true", help="only the --mcp-config servers")
    p.add_argument("--mode", help="localagent's permission mode (read-only, ask, auto-edit, full-auto)")
    p.add_argument("--profile", help="the server profile to start or attach to")
    p.add_argument("--base-url", help="an OpenAI-compatible endpoint instead of a managed server")
    for flag, takes_value in IGNORED:
        if takes_value:
            p.add_argument(flag, dest=_ignored_dest(flag), action="append", help=argparse.SUPPRESS)
        else:
            p.add_argument(flag, dest=_ignored_dest(flag), action="store_true", help=argparse.SUPPRESS)
    return p


def _ignored_dest(flag: str) -> str:
    return "ignored_" + flag.removeprefix("--").replace("-", "_")


def agent_options(args: argparse.Namespace, mcp_file: Path | None) -> AgentOptions:
    """localagent's options for these flags; a bad value is a UsageError (exit 2)."""
    if args.max_turns is not None and args.max_turns < 1:
        raise UsageError("--max-turns must be at least 1")
    if args.base_url is not None:
        check_base_url(args.base_url)
    if args.profile and args.base_url:
        raise UsageError("give --profile or --base-url, not both")
    mode = args.mode
    if mode is None and args.dangerously_skip_permissions:
        mode = "full-auto"
    if mode is None and args.permission_mode is not None:
        mode = PERMISSION_MODES[args.permission_mode]
    if args.continue_last and args.resume:
        raise UsageError("-c/--continue is --resume last; give one or the other")
    system = args.system_prompt
    if args.system_prompt_file is not None:
        if system:
            raise UsageError("give --system-prompt or --system-prompt-file, not both")
        try:
            system = args.system_prompt_file.read_text(encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"--system-prompt-file {args.system_prompt_file}: {exc.strerror or exc}") from None
    model = args.model.strip() if args.model else None
    return AgentOptions(
        profile=args.profile,
        base_url=args.base_url,
        mode=mode,
        max_steps=args.max_turns,
        resume="last" if args.continue_last else args.resume,
        headless=True,
        mcp_config=mcp_file,
        model=model or None,
        allowed_tools=rule_list(args.allowed_tools, "--allowedTools"),
        disallowed_tools=rule_list(args.disallowed_tools, "--disallowedTools"),
        system_prompt=system or None,
        append_system_prompt=args.append_system_prompt or None,
        tools=builtin_tool_names(args.tools),
        strict_mcp=args.strict_mcp_config,
        session_id=args.session_id,
    )


def builtin_tool_names(value: str | None) -> list[str] | None:
    """The built-in tools ``--tools`` offers, by our names; Claude Code's names (Read, Bash...)
    are the tools they stand for. None: all of them."""
    from agent.permissions import BUILTIN_TOOL_NAMES, CLAUDE_ALIASES

    if value is None or value.strip() == "default":
        return None
    names: list[str] = []
    for word in (part.strip() for part in value.split(",")):
        if not word:
            continue
        targets = CLAUDE_ALIASES.get(word) or ((word,) if word in BUILTIN_TOOL_NAMES else None)
        if targets is None:
            known = ", ".join(BUILTIN_TOOL_NAMES)
            raise UsageError(
                f"--tools: no built-in tool is named {word!r}; the tools are {known} (or Claude Code's names)"
            )
        names.extend(name for name in targets if name not in names)
    return names


@contextlib.contextmanager
def mcp_config_file(values: list[str]) -> Iterator[Path | None]:
    """The one --mcp-config, as a file: a path as given, JSON text written to a private
    temporary file for as long as the run lasts (it may hold tokens)."""
    if not values:
        yield None
        return
    if len(values) > 1:
        raise UsageError("give one --mcp-config (a .mcp.json file or its JSON text)")
    value = values[0].strip()
    if not value.startswith("{"):
        path = Path(value).expanduser()
        if not path.is_file():
            raise UsageError(f"--mcp-config {value} does not exist; give a .mcp.json file or its JSON text")
        yield path
        return
    try:
        data = json.loads(value)
    except json.JSONDecodeError as exc:
        raise UsageError(f"--mcp-config is not valid JSON ({exc.msg} at column {exc.colno})") from None
    descriptor, name = tempfile.mkstemp(prefix="localagent-mcp-", suffix=".json")
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as file:
            json.dump(data, file)
        yield Path(name)
    finally:
        Path(name).unlink(missing_ok=True)


def prompt_text(args: argparse.Namespace) -> str:
    if args.prompt not in (None, "-"):
        return str(args.prompt)
    if sys.stdin.isatty():
        raise UsageError('give the prompt (localagent -p "...") or pipe it to standard input')
    return sys.stdin.read()


def check_combination(args: argparse.Namespace) -> None:
    if args.input_format == "stream-json" and args.output_format != "stream-json":
        raise UsageError("--input-format stream-json needs --output-format stream-json")
    if args.include_partial_messages and args.output_format != "stream-json":
        raise UsageError("--include-partial-messages goes with --output-format stream-json")
    if args.permission_prompt_tool not in (None, "stdio"):
        raise UsageError(
            f"--permission-prompt-tool {args.permission_prompt_tool!r}: only 'stdio' (ask the SDK) is served here"
        )
    if args.permission_prompt_tool == "stdio" and args.input_format != "stream-json":
        raise UsageError("--permission-prompt-tool stdio needs --input-format stream-json")


def parse(argv: Sequence[str]) -> argparse.Namespace:
    """The flags; a malformed one is a UsageError (one line, exit 2), as everywhere else."""
    return parser().parse_args(list(argv))


def ignored_note(args: argparse.Namespace) -> str | None:
    """One line naming the flags given that mean nothing here; None when there are none."""
    flags = [flag for flag, _ in IGNORED if getattr(args, _ignored_dest(flag))]
    return f"note: ignored here (no meaning for a local model): {', '.join(flags)}" if flags else None


__all__ = [
    "PERMISSION_MODES",
    "agent_options",
    "ignored_note",
    "mcp_config_file",
    "parse",
    "prompt_text",
    "wants_claude_contract",
]
