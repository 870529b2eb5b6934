"""Permission modes and allow / ask / deny rules as written in the configuration.

Rules are written as in Claude Code: `bash(git status*)`, `edit(src/**)`, `view`, `mcp__git__*`.
Before the parentheses is a tool name, Claude Code's name for ours (`Read(.env)`) or a glob on
the tool name (agent.permissions.rule_names); inside is a pattern on the call: the command for bash, the
workspace-relative path for file tools, the one-line call summary otherwise. A name that names
no tool is an error when the rules come from the configuration.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal, get_args

from agent.errors import AgentError
from agent.permissions.rule_names import is_file_alias, known_names_line, tool_globs, unknown_name_problem

__all__ = [
    "ACTIONS",
    "BASH_TOOL",
    "FILE_EDIT_TOOLS",
    "MODE_NAMES",
    "PATH_TOOLS",
    "READ_TOOLS",
    "SEARCH_TOOLS",
    "Action",
    "ModeHint",
    "PermissionConfigError",
    "PermissionMode",
    "PermissionRules",
    "Rule",
    "check_rule_name",
    "default_mode_hint",
]

Action = Literal["allow", "ask", "deny"]
ACTIONS: tuple[Action, ...] = get_args(Action)

BASH_TOOL = "bash"
FILE_EDIT_TOOLS = frozenset({"create", "edit", "insert"})
# Tools whose call summary is a workspace-relative path.
PATH_TOOLS = FILE_EDIT_TOOLS | {"view"}
# Tools that read files under a `path` argument (the workspace when it is left out).
SEARCH_TOOLS = frozenset({"grep", "glob"})
# A deny or ask rule on paths for any of these covers reading those paths with each of them.
READ_TOOLS = frozenset({"view"}) | SEARCH_TOOLS

_TOOL_GLOB = re.compile(r"[A-Za-z0-9_.*?\[\]!-]+")


class PermissionConfigError(AgentError):
    """A permission mode or rule in the configuration or on the command line is invalid."""

    exit_code = 2


class PermissionMode(StrEnum):
    READ_ONLY = "read-only"
    ASK = "ask"
    AUTO_EDIT = "auto-edit"
    FULL_AUTO = "full-auto"

    @classmethod
    def parse(cls, value: str | PermissionMode) -> PermissionMode:
        try:
            return cls(value)
        except ValueError:
            choices = ", ".join(MODE_NAMES)
            raise PermissionConfigError(f"unknown permission mode {value!r}; use one of {choices}") from None


# Every mode's name, in order from the most to the least careful.
MODE_NAMES: tuple[str, ...] = tuple(m.value for m in PermissionMode)

# How the person switches to a mode, for advice in reasons: `--mode full-auto` on the command
# line, `/mode full-auto` in the TUI. The core names the setting, never a front end's syntax.
ModeHint = Callable[[str], str]


def default_mode_hint(mode: str) -> str:
    return f"mode {mode}"


@dataclass(frozen=True)
class Rule:
    text: str
    tool_glob: str
    # None: the rule covers every call of the tool.
    pattern: str | None
    # The globs on our tool names it covers: its own name, or ours for a Claude Code name.
    tools: tuple[str, ...] = ()

    @classmethod
    def parse(cls, text: str) -> Rule:
        raw = text.strip() if isinstance(text, str) else ""
        if not raw:
            raise PermissionConfigError(f"permission rule {text!r} is empty; write e.g. bash(git status*) or view")
        if "(" in raw:
            tool, _, rest = raw.partition("(")
            if not rest.endswith(")"):
                raise PermissionConfigError(f"invalid permission rule {raw!r}: it must end with ')'")
            pattern: str | None = rest[:-1]
        elif ")" in raw:
            raise PermissionConfigError(f"invalid permission rule {raw!r}: ')' without '('")
        else:
            tool, pattern = raw, None
        tool = tool.strip()
        if not tool:
            raise PermissionConfigError(f"invalid permission rule {raw!r}: no tool name before '('")
        if not _TOOL_GLOB.fullmatch(tool):
            raise PermissionConfigError(
                f"invalid permission rule {raw!r}: tool name {tool!r} may only use letters, digits, _ . - and * ? [ ]"
            )
        if pattern is not None and is_file_alias(tool) and pattern.strip().startswith(("~", "//")):
            raise PermissionConfigError(
                f"invalid permission rule {raw!r}: file tools never leave the workspace, so a path from "
                f"{pattern.strip()[:2]!r} names nothing they reach; write it relative to the workspace"
            )
        return cls(text=raw, tool_glob=tool, pattern=pattern, tools=tool_globs(tool))

    def covers_tool(self, tool_name: str) -> bool:
        name = tool_name.lower()
        return any(fnmatch.fnmatchcase(name, glob.lower()) for glob in self.tools or (self.tool_glob,))

    def restricts(self, tool_name: str) -> bool:
        """Whether, as a deny or ask rule, it speaks about calls of this tool: its own, or reading paths."""
        if self.covers_tool(tool_name):
            return True
        # `view(secret/**)` is about reading secret/: grep and glob read it too (and the other way round).
        return self.pattern is not None and tool_name in READ_TOOLS and any(map(self.covers_tool, READ_TOOLS))


@dataclass
class PermissionRules:
    allow: list[Rule] = field(default_factory=list)
    ask: list[Rule] = field(default_factory=list)
    deny: list[Rule] = field(default_factory=list)

    @classmethod
    def from_config(
        cls, data: Mapping[str, Any] | None, *, tool_names: Iterable[str] = (), origin: str = "agent.permissions"
    ) -> PermissionRules:
        """From `{"allow": [...], "ask": [...], "deny": [...]}`; unknown keys are errors.

        So is a rule whose name names no tool: one of ours or of `tool_names` (tools given besides
        the built-in ones), Claude Code's name for ours, `mcp__...`, or a glob that could match one.
        Such an error starts with `origin.LIST: ` (nothing when `origin` is "": the caller names it).
        """
        rules = cls()
        extra = tuple(tool_names)
        for key, values in (data or {}).items():
            if key not in ACTIONS:
                raise PermissionConfigError(f"unknown permission list {key!r}; use allow, ask or deny")
            if isinstance(values, str) or not isinstance(values, Iterable):
                raise PermissionConfigError(f"permissions.{key} must be a list of rule strings")
            for value in values:
                check_rule_name(Rule.parse(value), extra, where=f"{origin}.{key}" if origin else "")
                rules.add(key, value)
        return rules

    def add(self, action: str, text: str) -> Rule:
        if action not in ACTIONS:
            raise PermissionConfigError(f"unknown permission action {action!r}; use allow, ask or deny")
        rule = Rule.parse(text)
        bucket: list[Rule] = getattr(self, action)
        if rule not in bucket:
            bucket.append(rule)
        return rule

    def restricting_patterns(self, tool_name: str) -> list[Rule]:
        """The deny and ask rules with a pattern that speak about calls of this tool."""
        return [rule for rule in (*self.deny, *self.ask) if rule.pattern is not None and rule.restricts(tool_name)]


def check_rule_name(rule: Rule, tool_names: Iterable[str] = (), *, where: str = "") -> None:
    """Refuse a rule whose name names no tool: it would allow, ask or deny nothing at all."""
    problem = unknown_name_problem(rule.tool_glob, tool_names)
    if problem is not None:
        prefix = f"{where}: " if where else ""
        raise PermissionConfigError(
            f"{prefix}permission rule {rule.text!r} covers no tool: {problem}; {known_names_line()}"
        )
