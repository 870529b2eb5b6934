"""The permission policy: whether a tool call is allowed, asks for approval or is denied.

Order of precedence: a deny rule wins; read-only mode refuses every tool that writes, whatever
the allow rules say (bash runs there only when it is sandboxed read-only); below full-auto, file
tools may not write inside `.git` and must ask to change `.localagent.toml` or `.mcp.json`; then
an ask rule; then an allow rule; then the mode's default.

Rules match what a call touches, not only what it says (agent.permissions.call_view): a file path as
written and as resolved in the workspace, a bash command read through wrappers, quoting and
command strings, a grep or glob by the files it would read. How each kind of rule matches is in
agent.permissions.rule_matching; modes and the rules' syntax are in agent.permissions.rules, the tool names
they may use (Claude Code's among them) in agent.permissions.rule_names; patterns are matched in linear time
by agent.permissions.wildcards.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.permissions.call_view import CallView
from agent.permissions.path_targets import normalise_path
from agent.permissions.rule_matching import allowing_rules, first_restricting, rules_cannot_tell
from agent.permissions.rules import (
    BASH_TOOL,
    FILE_EDIT_TOOLS,
    MODE_NAMES,
    PATH_TOOLS,
    READ_TOOLS,
    SEARCH_TOOLS,
    Action,
    ModeHint,
    PermissionConfigError,
    PermissionMode,
    PermissionRules,
    Rule,
    default_mode_hint,
)
from agent.permissions.shell.commands import analyse
from agent.permissions.wildcards import escape_star

__all__ = [
    "FILE_EDIT_TOOLS",
    "MODE_NAMES",
    "PATH_TOOLS",
    "READ_TOOLS",
    "SEARCH_TOOLS",
    "Action",
    "Decision",
    "ModeHint",
    "PermissionConfigError",
    "PermissionMode",
    "PermissionPolicy",
    "PermissionRules",
    "Rule",
    "default_mode_hint",
    "resolve_without_person",
    "rule_for_call",
]

# Commands whose second word names what they do (`git push` is not `git status`).
_SUBCOMMAND_PROGRAMS = frozenset(
    {"git", "npm", "npx", "pnpm", "yarn", "cargo", "go", "uv", "pip", "pip3", "poetry", "docker", "kubectl",
     "make", "dotnet", "gradle", "mvn", "bun", "deno", "conda", "brew", "apt", "apt-get", "gh", "hatch", "just"}
)  # fmt: skip
# The modes the advice in reasons names, as the mode hint takes them.
_AUTO_EDIT, _FULL_AUTO = PermissionMode.AUTO_EDIT.value, PermissionMode.FULL_AUTO.value
_UNREADABLE_REMEDY = (
    "approve it in an interactive session; a plainer command (no variables as command names, eval or "
    "generated scripts) can be checked against the rules instead"
)
_SEARCH_REMEDY = (
    "approve it in an interactive session; a search with a narrower path or glob that leaves out the covered "
    "files needs no approval"
)


@dataclass(frozen=True)
class Decision:
    action: Action
    # For the person in the approval prompt and for the model when a call is refused.
    reason: str
    tool_name: str = ""
    summary: str = ""
    # The rule that decided, if one did.
    rule: str | None = None
    # What the user can do to allow it, where the usual advice (a mode or an allow rule) would not help.
    remedy: str | None = None
    # How the person switches modes, for the usual advice (the policy's own).
    mode_hint: ModeHint = field(default=default_mode_hint, compare=False, repr=False)


class PermissionPolicy:
    def __init__(
        self,
        mode: str | PermissionMode,
        rules: PermissionRules | None = None,
        *,
        bash_sandboxed: bool = False,
        mode_hint: ModeHint = default_mode_hint,
    ) -> None:
        self.mode = PermissionMode.parse(mode)
        self.rules = rules if rules is not None else PermissionRules()
        # Bash runs under a read-only sandbox in read-only mode, so it need not be refused there.
        self.bash_sandboxed = bash_sandboxed
        # How the person switches to a mode (`--mode X` for the CLI), for reasons that advise one.
        self.mode_hint = mode_hint

    def with_mode(self, mode: str | PermissionMode, *, bash_sandboxed: bool | None = None) -> PermissionPolicy:
        """The same rules under another mode; the sandbox flag stays unless given."""
        sandboxed = self.bash_sandboxed if bash_sandboxed is None else bash_sandboxed
        return PermissionPolicy(mode, self.rules, bash_sandboxed=sandboxed, mode_hint=self.mode_hint)

    def add_rule(self, action: str, rule_text: str) -> Rule:
        return self.rules.add(action, rule_text)

    def decide(
        self,
        tool_name: str,
        reads_only: bool,
        call_summary: str,
        *,
        workspace: Path | None = None,
        arguments: Mapping[str, Any] | None = None,
    ) -> Decision:
        """`reads_only` comes from the tool (for MCP tools, from whatever the caller trusts).

        With `workspace` (and the call's `arguments`), file tool paths are resolved there, so
        rules see where a call lands and not only how it spells the path.
        """
        call = CallView.of(tool_name, call_summary, workspace, arguments)

        def made(action: Action, reason: str, rule: Rule | None = None, remedy: str | None = None) -> Decision:
            ruled = rule.text if rule else None
            return Decision(action, reason, tool_name, call_summary, ruled, remedy, self.mode_hint)

        denied = first_restricting(self.rules.deny, call)
        if denied is not None:
            return made("deny", f"denied by rule {denied.text}", denied)
        if tool_name == BASH_TOOL and arguments is not None and arguments.get("outside_sandbox") is True:
            return self._outside_sandbox(call, arguments, made)
        sandboxed = self.mode is PermissionMode.READ_ONLY and tool_name == BASH_TOOL and self.bash_sandboxed
        if self.mode is PermissionMode.READ_ONLY and not reads_only and not sandboxed:
            return made("deny", f"read-only mode: {tool_name} is not allowed")
        if (
            call.tool_name in FILE_EDIT_TOOLS
            and call.path is not None
            and call.path.resolved is None
            and call.path.root is not None
        ):
            # The tool refuses it too; asking the person first would only ask about nothing.
            return made("deny", f"{call.path.written} is outside the workspace; file tools write only inside it")
        guarded = _guarded_write(call, self.mode_hint) if self.mode is not PermissionMode.FULL_AUTO else None
        if guarded is not None:
            return made(guarded.action, guarded.reason, remedy=guarded.remedy)
        unsure = rules_cannot_tell(self.rules, call)
        if unsure is not None:
            return made("ask", unsure, remedy=_SEARCH_REMEDY if call.search is not None else _UNREADABLE_REMEDY)
        asked = first_restricting(self.rules.ask, call)
        if asked is not None:
            return made("ask", f"rule {asked.text} asks for approval", asked)
        if sandboxed:
            return made("allow", "read-only sandbox")
        allowing = allowing_rules(self.rules.allow, call)
        if allowing:
            names = ", ".join(rule.text for rule in allowing)
            return made("allow", f"allowed by rule{'s' if len(allowing) > 1 else ''} {names}", allowing[0])
        if reads_only:
            return made("allow", f"{tool_name} only reads")
        if self.mode is PermissionMode.FULL_AUTO:
            return made("allow", f"full-auto mode allows {tool_name}")
        if self.mode is PermissionMode.AUTO_EDIT and tool_name in FILE_EDIT_TOOLS:
            return made("allow", f"auto-edit mode allows file edits ({tool_name})")
        return made("ask", f"{self.mode.value} mode: {tool_name} needs approval")

    def _outside_sandbox(self, call: CallView, arguments: Mapping[str, Any], made: Callable[..., Decision]) -> Decision:
        """A command the model asks to run without the sandbox: never without the person's word
        (or an allow rule they wrote), in every mode; never in read-only."""
        if self.mode is PermissionMode.READ_ONLY:
            return made("deny", "read-only mode never runs a command outside the sandbox")
        reason = str(arguments.get("reason") or "no reason given")
        asked = first_restricting(self.rules.ask, call)
        if asked is not None:
            return made("ask", f"outside the sandbox ({reason}); rule {asked.text} asks for approval", asked)
        allowing = allowing_rules(self.rules.allow, call)
        if allowing:
            return made("allow", f"outside the sandbox, allowed by rule {allowing[0].text}", allowing[0])
        return made(
            "ask",
            f"asks to run outside the sandbox: {reason}",
            remedy=f"add an allow rule such as {rule_for_call(BASH_TOOL, call.summary)}",
        )


def resolve_without_person(decision: Decision) -> Decision:
    """For headless runs: what would ask is denied, telling the model why and what would allow it."""
    if decision.action != "ask":
        return decision
    tool = decision.tool_name or "this call"
    hint = decision.mode_hint
    if decision.remedy is not None:
        remedy = decision.remedy
    elif decision.rule is not None:
        remedy = f"remove the ask rule {decision.rule} from the config"
    elif decision.tool_name in FILE_EDIT_TOOLS:
        remedy = f"rerun with {hint(_AUTO_EDIT)} or add the allow rule {rule_for_call(tool, decision.summary)}"
    elif decision.tool_name:
        remedy = f"rerun with {hint(_FULL_AUTO)} or add an allow rule such as {rule_for_call(tool, decision.summary)}"
    else:
        remedy = f"rerun with {hint(_FULL_AUTO)} or add an allow rule"
    return Decision(
        "deny",
        f"{tool} needs approval ({decision.reason}) but this is a headless run and no one can approve it; "
        f"do not retry it. To allow it, the user can {remedy}",
        decision.tool_name,
        decision.summary,
        decision.rule,
        decision.remedy,
        decision.mode_hint,
    )


def rule_for_call(tool_name: str, summary: str) -> str:
    """The rule an "allow always" answer adds: a command prefix for bash, the exact path for files."""
    if tool_name == BASH_TOOL:
        command = summary.strip()
        analysis = analyse(command)
        single = analysis.commands[0] if len(analysis.commands) == 1 else None
        if single is None or not single.words or single.assignments or not analysis.readable or analysis.writes_files:
            # Compound, wrapped or tricky commands are only ever allowed again verbatim.
            return f"bash({escape_star(command)})"
        words = [word.render() for word in single.words]
        if len(words) > 1 and words[0] in _SUBCOMMAND_PROGRAMS and words[1].startswith("-"):
            # Options before the subcommand (`git -c core.pager=x status`) can make the program run
            # anything: a prefix rule would allow `git -c core.sshCommand=... fetch` too.
            return f"bash({escape_star(command)})"
        count = 1
        if len(words) > 1 and words[0] in _SUBCOMMAND_PROGRAMS and not words[1].startswith("-"):
            count = 2
        elif len(words) > 2 and words[0].startswith("python") and words[1] == "-m":
            count = 3
        prefix = escape_star(" ".join(words[:count]))
        if prefix.endswith(":"):
            # `x:*` would read as Claude Code's word-prefix form; keep the colon literal.
            prefix = prefix[:-1] + "\\:"
        return f"bash({prefix}*)"
    if tool_name in PATH_TOOLS:
        path = normalise_path(summary)
        escaped = re.sub(r"([*?\[\\])", r"\\\1", path)
        # A bare name would match that name in every directory, as in .gitignore; anchor it.
        anchored = escaped if "/" in path.rstrip("/") else f"./{escaped}"
        return f"{tool_name}({anchored})"
    return tool_name


@dataclass(frozen=True)
class _Guard:
    action: Action
    reason: str
    remedy: str | None = None


def _guarded_write(call: CallView, mode_hint: ModeHint) -> _Guard | None:
    """Below full-auto, file tools may not write into .git and must ask to change the agent's config."""
    if call.tool_name not in FILE_EDIT_TOOLS or call.path is None:
        return None
    written, landed = call.path.written, call.path.resolved
    shown = written if landed in (None, written) else f"{written} (resolves to {landed})"
    git_directory = call.path.git_directory()
    if git_directory is not None:
        where = ".git" if git_directory == ".git" else f"the git directory {git_directory}"
        return _Guard(
            "deny", f"{shown} is inside {where}; file tools may not write there below full-auto mode "
                    "(git config and hooks can run code)",
        )  # fmt: skip
    if call.path.is_agent_config():
        return _Guard(
            "ask", f"{shown} is the workspace's agent configuration, which decides what the agent may run; "
                   "changes to it need approval",
            f"make the change by hand or rerun with {mode_hint(_FULL_AUTO)}",
        )  # fmt: skip
    return None
