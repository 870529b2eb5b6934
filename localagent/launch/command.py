"""``localagent launch claude|codex|opencode [PROFILE] [-- ARGS]``: run another coding agent on a
server localagent manages.

The profile's server is started or attached to (as ``localagent server start`` does); the agent's
own prompt is measured once per agent version and model and compared with the server's context
(``--no-check`` skips that); then the agent runs on this terminal with ARGS, pointed at the server
with its telemetry and updates off, and its exit code is localagent's.

The measurement counts with llama-server's token-count routes: on a vLLM or SGLang profile, or a
server that answers those routes 404, the check is skipped with a note and the agent runs.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from localagent.cli import CommandParser
from localagent.launch.agents import AGENTS, Agent

if TYPE_CHECKING:
    from localagent.context import AppContext
    from localagent.launch.local_server import LocalServer

USAGE = "localagent launch [-h] [--no-check | --remeasure] {claude,codex,opencode} [PROFILE] [-- ARGS ...]"
EPILOG = """examples:
  localagent launch claude                        Claude Code on the default profile's server
  localagent launch codex gemma4-31b-dflash       Codex on Gemma 4 31B with its DFlash draft
  localagent launch claude -- -p "fix the tests"  everything after -- goes to the agent
"""


class _ArgsAfterDashes(CommandParser):
    """Everything after the first ``--`` goes to the agent as it is, options included: argparse
    alone would read ``-p`` after ``--`` as the optional PROFILE."""

    def parse_known_args(  # type: ignore[override]  # same call, typeshed's overloads aside
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        words = list(args or [])
        passed_on: list[str] = []
        if "--" in words:
            cut = words.index("--")
            words, passed_on = words[:cut], words[cut + 1 :]
        parsed, unknown = super().parse_known_args(words, namespace)
        # argparse gives the optional PROFILE its turn together with AGENT, empty when an option
        # comes between them (`launch claude --remeasure big`): the word comes back unknown.
        if getattr(parsed, "profile", None) is None and unknown and not unknown[0].startswith("-"):
            parsed.profile = unknown.pop(0)
        parsed.agent_args = passed_on
        return parsed, unknown


def register(commands: argparse._SubParsersAction[Any]) -> None:
    launch = commands.add_parser(
        "launch",
        help="run Claude Code, Codex or opencode on a managed local server",
        description="Run another coding agent on this machine's managed llama-server: start or attach to "
        "the profile's server, check that the agent's own prompt fits its context, then run the agent "
        "with its telemetry and updates off and everything after -- as its arguments.",
        usage=USAGE,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    # The sub-parser class is the top parser's; this one alone splits its words at `--`.
    launch.__class__ = _ArgsAfterDashes
    launch.add_argument("agent", choices=sorted(AGENTS), help="the agent to run (it must be installed)")
    launch.add_argument("profile", nargs="?", help="the server profile (default: the configured profile)")
    check = launch.add_mutually_exclusive_group()
    check.add_argument(
        "--no-check",
        action="store_true",
        help="skip measuring the agent's prompt against the server's context",
    )
    check.add_argument(
        "--remeasure",
        action="store_true",
        help="measure the agent's prompt again, even if this version was measured before",
    )
    launch.set_defaults(handler=cmd_launch, agent_args=[])


def cmd_launch(args: argparse.Namespace) -> int:
    import asyncio

    from localagent.console import err
    from localagent.context import AppContext
    from localagent.launch.agent_run import run_agent
    from localagent.launch.agents import AgentEndpoint
    from localagent.launch.installed import agent_program
    from localagent.launch.local_server import start_or_attach

    agent = AGENTS[args.agent]
    program = agent_program(agent)  # before the server starts: a missing agent costs nothing
    ctx = AppContext.load()
    server = asyncio.run(start_or_attach(ctx, args.profile))
    if not args.no_check:
        _check_context(agent, program, server, ctx, remeasure=args.remeasure)
    settings = agent.settings(AgentEndpoint(server.base_url, server.api_key, server.model, server.context_tokens))
    err.print(f"running {program} on {server.base_url} ({server.model})", markup=False)
    return run_agent([program, *settings.args, *args.agent_args], settings.environment(os.environ))


def _check_context(agent: Agent, program: str, server: LocalServer, ctx: AppContext, *, remeasure: bool) -> None:
    """Stop when the agent's measured prompt leaves no room to work; else say what it takes."""
    from localagent.console import err
    from localagent.launch.context_check import PromptFit, require_fit
    from localagent.launch.installed import agent_version
    from localagent.launch.prompt_cache import PromptKey, default_prompt_cache
    from localagent.launch.prompt_measure import CountRouteMissing, measure_prompt
    from server.engines import launched_engine

    name = agent.name
    # The engine of the server's own profile when it was attached to another one's.
    profile = ctx.profiles.get(server.serving_profile) or ctx.profiles.get(server.profile)
    engine = launched_engine(profile) if profile is not None else None
    if engine is not None:
        err.print(
            f"note: {engine.display_name} has no token-count route like llama-server's; {name}'s prompt is not checked",
            markup=False,
        )
        return
    if server.context_tokens is None:
        err.print(f"note: the server does not say its context size; {name}'s prompt is not checked", markup=False)
        return
    version = agent_version(agent, program)
    key = PromptKey(name, version, server.model)
    cache = default_prompt_cache()
    tokens = None if remeasure else cache.get(key)
    if tokens is None:
        err.print(f"measuring {name} {version}'s own prompt (once per version)…", markup=False)
        try:
            tokens = measure_prompt(agent, program, server)
        except CountRouteMissing as exc:
            err.print(f"note: {exc}; {name}'s prompt is not checked", markup=False)
            return
        cache.put(key, tokens)
    fit = PromptFit(name, version, tokens, server.context_tokens)
    require_fit(fit, server.profile, server.serving_profile, ctx.profiles)
    err.print(fit.summary(), markup=False)
