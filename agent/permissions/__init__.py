"""Who may run what: rules, modes and the decision for one tool call.

The face of the room; the rest of the project imports from here. Inside: the engine
(``engine``), the rule lists and their names (``rules``, ``rule_names``), how a call reads to
the rules (``call_view``, ``path_targets``, ``search_reach``, ``wildcards``, ``rule_matching``),
the sandbox each mode runs commands in (``sandbox_modes``), and the shell reader (``shell/``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tools.lazy_exports import lazy_exports

if TYPE_CHECKING:
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

# Loaded on first use: importing the face costs nothing until a name is read.
_EXPORTS = {
    "PermissionPolicy": "agent.permissions.engine",
    "resolve_without_person": "agent.permissions.engine",
    "rule_for_call": "agent.permissions.engine",
    "BUILTIN_TOOL_NAMES": "agent.permissions.rule_names",
    "CLAUDE_ALIASES": "agent.permissions.rule_names",
    "MCP_NAME_MAX_LENGTH": "agent.permissions.rule_names",
    "MODE_NAMES": "agent.permissions.rules",
    "ModeHint": "agent.permissions.rules",
    "PermissionConfigError": "agent.permissions.rules",
    "PermissionMode": "agent.permissions.rules",
    "PermissionRules": "agent.permissions.rules",
    "Rule": "agent.permissions.rules",
    "check_rule_name": "agent.permissions.rules",
    "default_mode_hint": "agent.permissions.rules",
    "sandbox_for": "agent.permissions.sandbox_modes",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

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
