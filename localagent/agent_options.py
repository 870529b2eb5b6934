"""What a front end asks of the agent it builds, and the command-line flags that say it.

One builder for `localagent run` and for the TUI (`localagent` with no command): the same flags,
the same checks. The TUI's flags sit on the top-level parser next to the subcommands, so they
take ``dest`` names with a prefix (``tui_profile``) that keep them apart from `run`'s own.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent.permissions import (
    MODE_NAMES,
    ModeHint,
    PermissionConfigError,
    PermissionRules,
    default_mode_hint,
)
from localagent.errors import UsageError
from localagent.rule_lists import split_rules
from localagent.urls import EXAMPLE, url_problem

if TYPE_CHECKING:
    from agent.loop import AgentTool
    from localagent.context import AppContext
    from tools.mcp import AskApproval

SANDBOX_HELP = "bash runs under an OS sandbox (Landlock) in every mode; 'off' is allowed with --mode full-auto"


@dataclass
class AgentOptions:
    profile: str | None = None
    base_url: str | None = None
    mode: str | None = None
    max_steps: int | None = None
    resume: str | None = None
    headless: bool = False
    port: int | str | None = None
    extra_tools: list[AgentTool] = field(default_factory=list)
    mcp_config: Path | None = None
    trust_project_mcp: bool = False
    # The TUI's way to ask about a repo's own .mcp.json servers; without it they are skipped.
    approve_project_mcp: AskApproval | None = None
    sandbox: str | None = None  # "off" only with full-auto; None keeps the mode's sandbox
    # The request's `model` (llama-swap and Ollama route by it); None asks the server's /v1/models.
    model: str | None = None
    # Rules from --allowedTools / --disallowedTools, added to the configuration's allow and deny.
    allowed_tools: list[str] = field(default_factory=list)
    disallowed_tools: list[str] = field(default_factory=list)
    # How this front end's user picks a mode ("--mode X", "/mode X"), for the policy's advice.
    mode_hint: ModeHint = default_mode_hint
    # Claude Code's contract (localagent.claude_cli): the system prompt in place of localagent's
    # (None keeps it), text after it, the built-in tools offered (None: all), only the
    # --mcp-config servers, and the new session's id.
    system_prompt: str | None = None
    append_system_prompt: str | None = None
    tools: list[str] | None = None
    strict_mcp: bool = False
    session_id: str | None = None


def add_agent_arguments(
    parser: argparse.ArgumentParser, *, dest_prefix: str = "", headless: bool = False, resume: bool = True
) -> None:
    """--mode, --profile | --base-url, --model, --sandbox, --resume | -c (unless ``resume`` is
    False: an editor reopens sessions itself), --mcp-config, --trust-project-mcp,
    --allowed-tools, --disallowed-tools. ``headless``: the command takes a prompt (``run``)."""
    default = "agent.headless_mode, auto-edit" if headless else "agent.mode, ask"
    parser.add_argument(
        "--mode", dest=f"{dest_prefix}mode", choices=MODE_NAMES, help=f"permission mode (default: {default})"
    )
    endpoint = parser.add_mutually_exclusive_group()
    endpoint.add_argument(
        "--profile",
        dest=f"{dest_prefix}profile",
        metavar="PROFILE",
        help="server profile to start or attach to (default: server.profile)",
    )
    endpoint.add_argument(
        "--base-url",
        dest=f"{dest_prefix}base_url",
        metavar="BASE_URL",
        help="use this OpenAI-compatible endpoint instead of a managed server",
    )
    parser.add_argument(
        "--model",
        dest=f"{dest_prefix}model",
        metavar="NAME",
        help="the model name requests carry (default: the profile's model_id, else the server's first /v1/models id)",
    )
    parser.add_argument("--sandbox", dest=f"{dest_prefix}sandbox", choices=["on", "off"], help=SANDBOX_HELP)
    # Without ``resume`` the flags stay out of --help, accepted only to be refused with the reason.
    parser.add_argument(
        "--resume",
        dest=f"{dest_prefix}resume",
        metavar="ID|last",
        help="continue a saved session" if resume else argparse.SUPPRESS,
    )
    parser.add_argument(
        "-c",
        "--continue",
        dest=f"{dest_prefix}continue_last",
        action="store_true",
        help="continue the most recent session in this workspace (--resume last)" if resume else argparse.SUPPRESS,
    )
    add_mcp_arguments(parser, dest_prefix=dest_prefix)
    add_rule_arguments(parser, dest_prefix=dest_prefix, takes_prompt=headless)


def add_rule_arguments(parser: argparse.ArgumentParser, *, dest_prefix: str = "", takes_prompt: bool = True) -> None:
    """Claude Code's --allowedTools / --disallowedTools (either spelling): rule lists, comma- or
    space-separated, added to the configured allow and deny rules."""
    for flags, dest, what in (
        (("--allowed-tools", "--allowedTools"), "allowed_tools", "allow"),
        (("--disallowed-tools", "--disallowedTools"), "disallowed_tools", "deny"),
    ):
        parser.add_argument(
            *flags,
            dest=f"{dest_prefix}{dest}",
            action="extend",
            nargs="+",
            default=[],
            metavar="RULE",
            help=f'permission rules to {what}, comma- or space-separated, e.g. "Bash(git log:*)" Read;'
            f" added to the config's {what} list" + (" (give the prompt first, or after --)" if takes_prompt else ""),
        )


def add_mcp_arguments(parser: argparse.ArgumentParser, *, dest_prefix: str = "") -> None:
    parser.add_argument(
        "--mcp-config",
        dest=f"{dest_prefix}mcp_config",
        type=Path,
        metavar="FILE",
        help="more MCP servers, in .mcp.json format",
    )
    parser.add_argument(
        "--trust-project-mcp",
        dest=f"{dest_prefix}trust_project_mcp",
        action="store_true",
        help="start the servers of this repository's .mcp.json without asking",
    )


def options_from_args(
    args: argparse.Namespace, *, dest_prefix: str = "", headless: bool, max_steps: int | None = None
) -> AgentOptions:
    """The options the flags of ``add_agent_arguments`` give; a bad value fails here, before
    anything starts (an unknown profile needs the configuration: see ``check_profile``)."""

    def arg(name: str) -> Any:
        return getattr(args, dest_prefix + name)

    resume, base_url, model = arg("resume"), arg("base_url"), arg("model")
    if resume is not None and not resume.strip():
        raise UsageError("--resume needs a session id or 'last'; see `localagent sessions`")
    if arg("continue_last"):
        if resume is not None:
            raise UsageError("-c/--continue is --resume last; give one or the other")
        resume = "last"
    if base_url is not None:
        check_base_url(base_url)
    if model is not None and (not model.strip() or not model.isprintable()):
        raise UsageError(f"--model {model!r} must be a model name, e.g. --model qwen3-coder")
    check_mcp_config(arg("mcp_config"))
    allowed = rule_list(arg("allowed_tools"), "--allowedTools")
    disallowed = rule_list(arg("disallowed_tools"), "--disallowedTools")
    return AgentOptions(
        profile=arg("profile"),
        base_url=base_url,
        mode=arg("mode"),
        max_steps=max_steps,
        resume=resume,
        headless=headless,
        mcp_config=arg("mcp_config"),
        trust_project_mcp=arg("trust_project_mcp"),
        sandbox=arg("sandbox"),
        model=model.strip() if model else None,
        allowed_tools=allowed,
        disallowed_tools=disallowed,
    )


def rule_list(values: list[str] | None, flag: str) -> list[str]:
    """The rules of a --allowedTools / --disallowedTools list; a bad rule fails here, as one line."""
    rules = [rule for value in values or [] for rule in split_rules(value)]
    try:
        PermissionRules.from_config({"allow": rules}, origin="")
    except PermissionConfigError as exc:
        raise UsageError(f"{flag}: {exc}") from None
    return rules


def check_base_url(url: str, flag: str = "--base-url") -> None:
    problem = url_problem(url)
    if problem is not None:
        raise UsageError(f"{flag} {url!r} {problem}; {EXAMPLE}")


def check_mcp_config(path: Path | None) -> None:
    """A --mcp-config that does not exist is a typo: fail before anything starts."""
    if path is not None and not path.expanduser().is_file():
        raise UsageError(f"--mcp-config {path} does not exist; give the path of a .mcp.json-style file")


def check_profile(ctx: AppContext, name: str | None) -> None:
    """An unknown profile fails before anything starts (or the screen opens)."""
    if name:
        from server.profile_loading import get_profile

        get_profile(ctx.profiles, name)
