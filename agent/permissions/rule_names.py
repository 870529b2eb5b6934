"""The tool names a permission rule may use: ours, Claude Code's, MCP tools and globs over them.

A rule's name is one of our tools (`view`, in any case, as before), one of Claude Code's names
for the same thing (`Read(.env)`), an MCP tool or server (`mcp__git__status`, `mcp__git`,
`mcp__git__*`), or a glob (`*`, `ed*`). Claude Code's names stand for every tool of ours that does
what theirs does, so a deny rule written for Claude Code stops each of them: `Read` is view,
grep and glob (Claude Code applies Read rules to its Grep and Glob too); `Write`, `Edit` and
`MultiEdit` are create, edit and insert (Claude Code applies Edit rules to every tool that edits
a file, and each of ours changes a file). A name that is none of these is a configuration error,
never a rule that quietly matches nothing.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping

__all__ = [
    "BUILTIN_TOOL_NAMES",
    "CLAUDE_ALIASES",
    "MCP_PREFIX",
    "alias_targets",
    "is_file_alias",
    "known_names_line",
    "tool_globs",
    "unknown_name_problem",
]

# tools.registry.builtin_tools(), by name (tests/test_rule_names.py keeps the two the same).
BUILTIN_TOOL_NAMES = ("bash", "view", "create", "edit", "insert", "grep", "glob")
MCP_PREFIX = "mcp__"
# tools.mcp.names.MAX_NAME_LENGTH: longer MCP tool names are cut to it (the tests keep the two the same).
MCP_NAME_MAX_LENGTH = 64
# The characters of an MCP tool's name as rules match it (in lower case; tools.mcp.names.sanitise).
_MCP_NAME_CHARS = "abcdefghijklmnopqrstuvwxyz0123456789_-"

_READING = ("view", "grep", "glob")
_WRITING = ("create", "edit", "insert")
# Claude Code's tool names, spelled as Claude Code spells them, and the tools of ours they stand for.
CLAUDE_ALIASES: Mapping[str, tuple[str, ...]] = {
    "Read": _READING,
    "LS": ("view",),
    "Write": _WRITING,
    "Edit": _WRITING,
    "MultiEdit": _WRITING,
    "Bash": ("bash",),
    "Grep": ("grep",),
    "Glob": ("glob",),
}
# Names no tool of ours has, so any spelling means Claude Code's: `read(.env)` is `Read(.env)`.
# `edit`, `bash`, `grep` and `glob` in any other spelling stay ours, matched in any case as before.
_CLAUDE_ONLY = {
    name.lower(): targets for name, targets in CLAUDE_ALIASES.items() if name.lower() not in BUILTIN_TOOL_NAMES
}
# Claude Code tools localagent has no counterpart for: named as such in the error.
_CLAUDE_WITHOUT_COUNTERPART = frozenset(
    name.lower()
    for name in ("WebFetch", "WebSearch", "Task", "Agent", "TodoWrite", "TodoRead", "NotebookEdit", "NotebookRead",
                 "BashOutput", "KillShell", "KillBash", "ExitPlanMode", "SlashCommand", "Skill")
)  # fmt: skip
# Claude Code's names whose rules take a path (Grep and Glob are ours too, and keep our meaning).
_FILE_ALIASES = frozenset({"read", "ls", "write", "edit", "multiedit"})
_GLOB_CHARS = re.compile(r"[*?\[]")


def alias_targets(name: str) -> tuple[str, ...] | None:
    """Our tools for a Claude Code name (`Read`, `read`, `Edit`), or None when it is not one."""
    if name in CLAUDE_ALIASES:
        return CLAUDE_ALIASES[name]
    return _CLAUDE_ONLY.get(name.lower())


def is_file_alias(name: str) -> bool:
    """Whether the name is a Claude Code name for our tools that take a path (Read, Write, Edit...)."""
    return alias_targets(name) is not None and name.lower() in _FILE_ALIASES


def tool_globs(name: str) -> tuple[str, ...]:
    """The globs on our tool names that a rule's name stands for (matched in any case)."""
    targets = alias_targets(name)
    if targets is not None:
        return targets
    lowered = name.lower()
    server = lowered.removeprefix(MCP_PREFIX)
    if lowered.startswith(MCP_PREFIX) and server and "__" not in server and not _GLOB_CHARS.search(server):
        # `mcp__git` is every tool of the git server, as in Claude Code. A name cut to the longest
        # a tool may have (tools/mcp/names.py: `mcp__<50 chars>_<hash>`) may be a tool's own name
        # too, with no `__` left after the prefix: the rule covers that tool as well.
        if len(name) >= MCP_NAME_MAX_LENGTH:
            return (name, f"{name}__*")
        return (f"{name}__*",)
    return (name,)


def unknown_name_problem(name: str, extra_names: Iterable[str] = ()) -> str | None:
    """Why a rule's tool name names no tool at all, or None when it names some."""
    lowered = name.lower()
    if lowered == MCP_PREFIX:
        return "an MCP rule names a server: mcp__<server> or mcp__<server>__<tool>"
    if alias_targets(name) is not None or lowered.startswith(MCP_PREFIX):
        return None
    known = {*BUILTIN_TOOL_NAMES, *(extra.lower() for extra in extra_names)}
    if not _GLOB_CHARS.search(name):
        if lowered in known:
            return None
        if lowered in _CLAUDE_WITHOUT_COUNTERPART:
            return f"{name} is a Claude Code tool that localagent does not have"
        return f"no tool is called {name!r}"
    if any(fnmatch.fnmatchcase(tool, lowered) for tool in known) or _could_name_mcp(lowered):
        return None
    return f"the tool glob {name!r} matches none of localagent's tools (globs match our names, not Claude Code's)"


def known_names_line() -> str:
    """The names a rule may use, for error messages (one line)."""
    ours = ", ".join(BUILTIN_TOOL_NAMES)
    claude = ", ".join(CLAUDE_ALIASES)
    return f"use one of {ours}, Claude Code's {claude}, mcp__<server> or mcp__<server>__<tool>, or a glob such as *"


def _could_name_mcp(glob: str) -> bool:
    """Whether a (lower-case) glob matches some name `mcp__...` an MCP tool could have.

    Not just its text before the first wildcard: `[Rr]ead` and `?ead` start with a wildcard and
    still match no such name, while `*__read_file` does. The glob's tokens are run over `mcp__`
    (an NFA: the set of positions it may be at), then what is left must match some characters.
    """
    tokens = _glob_tokens(glob)

    def closure(states: set[int]) -> set[int]:
        # `*` matches nothing too: a state before it is a state after it.
        out, todo = set(states), list(states)
        while todo:
            at = todo.pop()
            if at < len(tokens) and tokens[at] == "*" and at + 1 not in out:
                out.add(at + 1)
                todo.append(at + 1)
        return out

    states = closure({0})
    for char in MCP_PREFIX:
        step: set[int] = set()
        for at in states:
            if at < len(tokens) and tokens[at] == "*":
                step.add(at)
            elif at < len(tokens) and fnmatch.fnmatchcase(char, tokens[at]):
                step.add(at + 1)
        states = closure(step)
    # The rest, from any state reached, matches some name if each token matches some character.
    return any(
        all(token == "*" or any(fnmatch.fnmatchcase(c, token) for c in _MCP_NAME_CHARS) for token in tokens[at:])
        for at in states
    )


def _glob_tokens(glob: str) -> list[str]:
    """A glob cut into what each matches: `*`, or a one-character glob (a letter, `?`, `[...]`),
    cut as fnmatch reads it (a `[` with no `]` to close it is a plain `[`)."""
    tokens: list[str] = []
    i = 0
    while i < len(glob):
        char = glob[i]
        if char == "[":
            j = i + 1
            if j < len(glob) and glob[j] == "!":
                j += 1
            if j < len(glob) and glob[j] == "]":
                j += 1
            j = glob.find("]", j)
            if j != -1:
                tokens.append(glob[i : j + 1])
                i = j + 1
                continue
            tokens.append("[[]")
        elif char == "*":
            if not tokens or tokens[-1] != "*":
                tokens.append("*")
        else:
            tokens.append(char)
        i += 1
    return tokens
