"""A workspace's `.localagent.toml` can only narrow what the user allowed, until approved.

A repository is a stranger's input. Without the user's approval of the file's exact content, its
settings may add deny and ask rules, pick a stricter permission mode, and tune harmless limits;
anything that widens permissions, executes or exposes (allow rules, a looser mode, `env_allow`,
the server binary, host, API key or URL, profiles with their paths and extra arguments) is
ignored with a notice naming it. So is a deny or ask rule of its own that names no tool or is
malformed: the person never wrote it, and it must not keep the agent from starting (a bad rule in
the user's file or in an approved one stays an error). Once approved (`localagent config approve`, remembered per
repository and content hash like `.mcp.json`), the file applies whole.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from agent.permissions import MODE_NAMES, PermissionConfigError, PermissionMode, Rule, check_rule_name

# Strictest first (the enum's order): a workspace may move the mode left, never right.
MODE_ORDER = MODE_NAMES
# The defaults of agent.mode and agent.headless_mode (the settings take them from here).
DEFAULT_MODES = {"mode": PermissionMode.ASK, "headless_mode": PermissionMode.AUTO_EDIT}

# Keys that only tune limits or narrow; everything not listed under a section widens.
_NARROWING_AGENT_KEYS = frozenset(
    {"max_steps", "max_tokens", "compact_threshold", "bash_timeout", "instructions_max_bytes"}
)
_NARROWING_SERVER_KEYS = frozenset({"port", "startup_timeout"})
_APPENDED_RULE_LISTS = ("deny", "ask")

_WHY = {
    "agent.permissions.allow": "allows tools",
    "agent.env_allow": "passes secrets to tools",
    "agent.mode": "loosens the permission mode",
    "agent.headless_mode": "loosens the permission mode",
    "server.binary": "runs a program",
    "server.host": "exposes the server",
    "server.api_key": "sets a credential",
    "server.base_url": "sends your code elsewhere",
    "server.profile": "picks a profile this file defines",
    "profiles": "defines model paths, server arguments, engines and RPC workers",
}


@dataclass
class WorkspaceLayer:
    """What of a workspace file applies, and what was held back."""

    applied: dict[str, Any]
    ignored: list[str] = field(default_factory=list)  # dotted keys
    # Deny and ask rules of the file that are no rules at all, left out: (dotted list, rule, why).
    dropped_rules: list[tuple[str, str, str]] = field(default_factory=list)

    def notices(self, file_name: str) -> list[str]:
        # `why` names the rule: one line each, for rules a stranger wrote that mean nothing.
        lines = [f"ignored a rule in {key} of {file_name}: {why}" for key, _, why in self.dropped_rules]
        if not self.ignored:
            return lines
        named = ", ".join(f"{key} ({_WHY.get(key, 'widens what is allowed')})" for key in self.ignored)
        held_back = (
            f"ignored settings from {file_name} that widen what you allowed: {named}; "
            "review and approve the file with `localagent config approve` to use them"
        )
        return [held_back, *lines]


def content_digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def file_digest(text: str) -> str:
    """The digest a workspace file is approved by: of its text with newlines normalised, as
    `Path.read_text` gives it, so the loader, `config approve` and a saved rule agree whether
    they read the file in text mode or as bytes (a CRLF file stays approved)."""
    return content_digest(text.replace("\r\n", "\n").replace("\r", "\n"))


def _rank(mode: Any) -> int:
    return MODE_ORDER.index(mode) if mode in MODE_ORDER else len(MODE_ORDER)


def narrow_workspace_layer(user: dict[str, Any], workspace: dict[str, Any]) -> WorkspaceLayer:
    """The part of an unapproved workspace file that may apply over the user's settings."""
    applied: dict[str, Any] = {}
    ignored: list[str] = []
    dropped: list[tuple[str, str, str]] = []
    user_agent: dict[str, Any] = user.get("agent") if isinstance(user.get("agent"), dict) else {}  # type: ignore[assignment]  # checked just here
    user_profiles: dict[str, Any] = user.get("profiles") if isinstance(user.get("profiles"), dict) else {}  # type: ignore[assignment]  # checked just here
    for written, value in workspace.items():
        # The settings loader matches top-level names in any case ([AGENT] is [agent]).
        section = written.lower() if isinstance(written, str) else written
        if section in applied:
            ignored.append(str(written))  # a second spelling of a section already seen
        elif section == "agent":
            applied["agent"] = _narrow_agent(user_agent, value, ignored, dropped) if isinstance(value, dict) else value
        elif section == "server":
            applied["server"] = (
                _narrow_server(value, user_profiles, workspace, ignored) if isinstance(value, dict) else value
            )
        elif section == "profiles":
            ignored.append("profiles")
        else:
            applied[written] = value  # unknown sections fail validation with their name
    return WorkspaceLayer(applied, ignored, dropped)


def _narrow_agent(
    user_agent: dict[str, Any], agent: dict[str, Any], ignored: list[str], dropped: list[tuple[str, str, str]]
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in agent.items():
        if key in DEFAULT_MODES:
            current = user_agent.get(key, DEFAULT_MODES[key])
            if _rank(value) <= _rank(current) and value in MODE_ORDER:
                out[key] = value
            else:
                ignored.append(f"agent.{key}")
        elif key == "permissions" and isinstance(value, dict):
            out["permissions"] = _narrow_permissions(user_agent.get("permissions") or {}, value, ignored, dropped)
        elif key in _NARROWING_AGENT_KEYS:
            out[key] = value
        else:
            ignored.append(f"agent.{key}")
    return out


def _narrow_permissions(
    user_rules: Any, rules: dict[str, Any], ignored: list[str], dropped: list[tuple[str, str, str]]
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    user_rules = user_rules if isinstance(user_rules, dict) else {}
    for key, value in rules.items():
        if key in _APPENDED_RULE_LISTS and isinstance(value, list):
            # Appended, never replacing: `deny = []` in a repository must not drop the user's rules.
            mine = user_rules.get(key) if isinstance(user_rules.get(key), list) else []
            theirs: list[Any] = []
            for rule in value:
                if rule in mine or rule in theirs:
                    continue
                problem = _rule_problem(rule)
                if problem is None:
                    theirs.append(rule)
                else:
                    dropped.append((f"agent.permissions.{key}", str(rule), problem))
            out[key] = [*mine, *theirs]
        elif key in _APPENDED_RULE_LISTS:
            out[key] = value  # wrong type: validation names it
        else:
            ignored.append(f"agent.permissions.{key}")
    return out


def _rule_problem(rule: Any) -> str | None:
    """Why a workspace's rule is no rule at all (malformed, names no tool, a refused path), or None.

    Only the built-in names, Claude Code's and MCP names are known here: a rule naming a tool an
    embedder adds besides those is dropped too.
    """
    if not isinstance(rule, str):
        return f'{rule!r} is not a rule; write one as a string, e.g. "view(.env)"'
    try:
        check_rule_name(Rule.parse(rule))
    except PermissionConfigError as exc:
        return str(exc)
    return None


def _narrow_server(
    server: dict[str, Any], user_profiles: dict[str, Any], workspace: dict[str, Any], ignored: list[str]
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    workspace_profiles: dict[str, Any] = {}
    for key, value in workspace.items():
        if isinstance(key, str) and key.lower() == "profiles" and isinstance(value, dict):
            workspace_profiles.update(value)
    for key, value in server.items():
        if key in _NARROWING_SERVER_KEYS:
            out[key] = value
        elif key == "profile" and (value not in workspace_profiles or value in user_profiles):
            out[key] = value  # a built-in or the user's own profile
        else:
            ignored.append(f"server.{key}")
    return out
