"""Who may run what: rules, modes and the decision for one tool call.

The face of the room; the rest of the project imports from here. Inside: the engine
(``engine``), the rule lists and their names (``rules``, ``rule_names``), how a call reads to
the rules (``call_view``, ``path_targets``, ``search_reach``, ``wildcards``, ``rule_matching``),
the sandbox each mode runs commands in (``sandbox_modes``), and the shell reader (``shell/``).
"""

from agent.permissions.engine import PermissionPolicy, resolve_without_person, rule_for_call
from agent.permissions.rule_names import BUILTIN_TOOL_NAMES, CLAUDE_ALIASES, MCP_NAME_MAX_LENGTH
from agent.permissions.rules import (
    MODE_NAMES,
    ModeHint,
    PermissionConfigError,
    PermissionMode,
    PermissionRules,
    Rule,
    check_rule_name,
    default_mode_hint,
)
from agent.permissions.sandbox_modes import sandbox_for

__all__ = [
    "BUILTIN_TOOL_NAMES",
    "CLAUDE_ALIASES",
    "MCP_NAME_MAX_LENGTH",
    "MODE_NAMES",
    "ModeHint",
    "PermissionConfigError",
    "PermissionMode",
    "PermissionPolicy",
    "PermissionRules",
    "Rule",
    "check_rule_name",
    "default_mode_hint",
    "resolve_without_person",
    "rule_for_call",
    "sandbox_for",
]
