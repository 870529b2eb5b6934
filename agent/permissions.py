"""Permission modes and allow / ask / deny rules for tool calls.

Rules are written as in Claude Code: `bash(git status*)`, `edit(src/**)`, `view`, `mcp__git__*`.
Before the parentheses is a glob on the tool name; inside is a pattern on the call: the command
for bash, the workspace-relative path for file tools, the one-line call summary otherwise.

Order of precedence: a deny rule wins; read-only mode refuses every tool that writes, whatever
the allow rules say; then an ask rule; then an allow rule; then the mode's default.
"""

from __future__ import annotations

import fnmatch
import posixpath
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from functools import lru_cache
from typing import Any, Literal, get_args

from agent.errors import AgentError
from tools.glob_patterns import glob_to_regex_source

__all__ = [
    "Action",
    "Decision",
    "FILE_EDIT_TOOLS",
    "PATH_TOOLS",
    "PermissionConfigError",
    "PermissionMode",
    "PermissionPolicy",
    "PermissionRules",
    "Rule",
    "resolve_without_person",
    "rule_for_call",
]

Action = Literal["allow", "ask", "deny"]
ACTIONS: tuple[Action, ...] = get_args(Action)

BASH_TOOL = "bash"
MCP_PREFIX = "mcp__"
FILE_EDIT_TOOLS = frozenset({"create", "edit", "insert"})
# Tools whose call summary is a workspace-relative path.
PATH_TOOLS = FILE_EDIT_TOOLS | {"view"}

# Commands whose second word names what they do (`git push` is not `git status`).
_SUBCOMMAND_PROGRAMS = frozenset(
    {"git", "npm", "npx", "pnpm", "yarn", "cargo", "go", "uv", "pip", "pip3", "poetry", "docker", "kubectl",
     "make", "dotnet", "gradle", "mvn", "bun", "deno", "conda", "brew", "apt", "apt-get", "gh", "hatch", "just"}
)  # fmt: skip
# Wrappers that run the rest of the line as a command; deny rules look through them.
_WRAPPERS = ("sudo", "command", "exec", "nohup", "time", "env", "nice", "xargs", "doas")
_ENV_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=\S*\s+")
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
            choices = ", ".join(m.value for m in cls)
            raise PermissionConfigError(f"unknown permission mode {value!r}; use one of {choices}") from None


@dataclass(frozen=True)
class Rule:
    text: str
    tool_glob: str
    # None: the rule covers every call of the tool.
    pattern: str | None

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
        return cls(text=raw, tool_glob=tool, pattern=pattern)

    def covers_tool(self, tool_name: str) -> bool:
        return fnmatch.fnmatchcase(tool_name.lower(), self.tool_glob.lower())


@dataclass(frozen=True)
class Decision:
    action: Action
    # For the person in the approval prompt and for the model when a call is refused.
    reason: str
    tool_name: str = ""
    summary: str = ""
    # The rule that decided, if one did.
    rule: str | None = None


@dataclass
class PermissionRules:
    allow: list[Rule] = field(default_factory=list)
    ask: list[Rule] = field(default_factory=list)
    deny: list[Rule] = field(default_factory=list)

    @classmethod
    def from_config(cls, data: Mapping[str, Any] | None) -> PermissionRules:
        """From `{"allow": [...], "ask": [...], "deny": [...]}`; unknown keys are errors."""
        rules = cls()
        for key, values in (data or {}).items():
            if key not in ACTIONS:
                raise PermissionConfigError(f"unknown permission list {key!r}; use allow, ask or deny")
            if isinstance(values, str) or not isinstance(values, Iterable):
                raise PermissionConfigError(f"permissions.{key} must be a list of rule strings")
            for value in values:
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


class PermissionPolicy:
    def __init__(self, mode: str | PermissionMode, rules: PermissionRules | None = None) -> None:
        self.mode = PermissionMode.parse(mode)
        self.rules = rules if rules is not None else PermissionRules()

    def add_rule(self, action: str, rule_text: str) -> Rule:
        return self.rules.add(action, rule_text)

    def decide(self, tool_name: str, reads_only: bool, call_summary: str) -> Decision:
        """`reads_only` comes from the tool (for MCP tools, from whatever the caller trusts)."""

        def made(action: Action, reason: str, rule: Rule | None = None) -> Decision:
            return Decision(action, reason, tool_name, call_summary, rule.text if rule else None)

        denied = _first_restricting(self.rules.deny, tool_name, call_summary)
        if denied is not None:
            return made("deny", f"denied by rule {denied.text}", denied)
        if self.mode is PermissionMode.READ_ONLY and not reads_only:
            return made("deny", f"read-only mode: {tool_name} is not allowed")
        asked = _first_restricting(self.rules.ask, tool_name, call_summary)
        if asked is not None:
            return made("ask", f"rule {asked.text} asks for approval", asked)
        allowing = _allowing_rules(self.rules.allow, tool_name, call_summary)
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


def resolve_without_person(decision: Decision) -> Decision:
    """For headless runs: what would ask is denied, telling the model why and what would allow it."""
    if decision.action != "ask":
        return decision
    tool = decision.tool_name or "this call"
    if decision.rule is not None:
        remedy = f"remove the ask rule {decision.rule} from the config"
    elif decision.tool_name in FILE_EDIT_TOOLS:
        remedy = f"rerun with --mode auto-edit or add the allow rule {rule_for_call(tool, decision.summary)}"
    elif decision.tool_name:
        remedy = f"rerun with --mode full-auto or add an allow rule such as {rule_for_call(tool, decision.summary)}"
    else:
        remedy = "rerun with --mode full-auto or add an allow rule"
    return Decision(
        "deny",
        f"{tool} needs approval ({decision.reason}) but this is a headless run and no one can approve it; "
        f"do not retry it. To allow it, the user can {remedy}",
        decision.tool_name,
        decision.summary,
        decision.rule,
    )


def rule_for_call(tool_name: str, summary: str) -> str:
    """The rule an "allow always" answer adds: a command prefix for bash, the exact path for files."""
    if tool_name == BASH_TOOL:
        command = summary.strip()
        segments, risky = _split_command(command)
        if risky or len(segments) != 1 or _ENV_ASSIGNMENT.match(command):
            # Compound or tricky commands are only ever allowed again verbatim.
            return f"bash({_escape_star(command)})"
        words = segments[0].split()
        count = 1
        if len(words) > 1 and words[0] in _SUBCOMMAND_PROGRAMS and not words[1].startswith("-"):
            count = 2
        elif len(words) > 2 and words[0].startswith("python") and words[1] == "-m":
            count = 3
        prefix = _escape_star(" ".join(words[:count]))
        if prefix.endswith(":"):
            # `x:*` would read as Claude Code's word-prefix form; keep the colon literal.
            prefix = prefix[:-1] + "\\:"
        return f"bash({prefix}*)"
    if tool_name in PATH_TOOLS:
        path = _normalise_path(summary)
        escaped = re.sub(r"([*?\[\\])", r"\\\1", path)
        # A bare name would match that name in every directory, as in .gitignore; anchor it.
        anchored = escaped if "/" in path.rstrip("/") else f"./{escaped}"
        return f"{tool_name}({anchored})"
    return tool_name


# -- matching ---------------------------------------------------------------------------------


def _first_restricting(rules: list[Rule], tool_name: str, summary: str) -> Rule | None:
    """Deny and ask rules: a match anywhere in the call is enough (err on the side of stopping)."""
    for rule in rules:
        if not rule.covers_tool(tool_name):
            continue
        if rule.pattern is None:
            return rule
        if tool_name == BASH_TOOL:
            candidates = [summary.strip(), *_command_parts_loose(summary)]
            if any(_star_regex(rule.pattern).fullmatch(c) for c in candidates):
                return rule
        elif tool_name in PATH_TOOLS:
            if _path_regex(rule.pattern).fullmatch(_normalise_path(summary).lstrip("/")):
                return rule
        elif _star_regex(rule.pattern).fullmatch(summary.strip()):
            return rule
    return None


def _allowing_rules(rules: list[Rule], tool_name: str, summary: str) -> list[Rule]:
    """Allow rules: every part of the call must be covered, or nothing is allowed."""
    relevant = [rule for rule in rules if rule.covers_tool(tool_name)]
    whole = next((rule for rule in relevant if rule.pattern is None), None)
    if whole is not None:
        return [whole]
    if tool_name == BASH_TOOL:
        return _allowing_bash(relevant, summary.strip())
    if tool_name in PATH_TOOLS:
        path = _normalise_path(summary)
        if path.startswith("/") or path == ".." or path.startswith("../"):
            return []
        return [r for r in relevant if r.pattern is not None and _path_regex(r.pattern).fullmatch(path)][:1]
    text = summary.strip()
    return [r for r in relevant if r.pattern is not None and _star_regex(r.pattern).fullmatch(text)][:1]


def _allowing_bash(rules: list[Rule], command: str) -> list[Rule]:
    # A rule written out as the exact command allows exactly that command, however complex.
    for rule in rules:
        literal = rule.pattern is not None and not _has_wildcard(rule.pattern)
        if literal and rule.pattern is not None and _star_regex(rule.pattern).fullmatch(command):
            return [rule]
    segments, risky = _split_command(command)
    if risky or not segments:
        return []
    used: list[Rule] = []
    for segment in segments:
        match = next((r for r in rules if r.pattern is not None and _star_regex(r.pattern).fullmatch(segment)), None)
        if match is None:
            return []
        if match not in used:
            used.append(match)
    return used


def _split_command(command: str) -> tuple[list[str], bool]:
    """Split on unquoted `;`, `&&`, `||`, `|`, `&` and newlines.

    `risky` is set when the line does things a prefix rule cannot vouch for: command or process
    substitution, subshells, or redirecting output into a file.
    """
    segments: list[str] = []
    current: list[str] = []
    risky = False
    quote: str | None = None
    i, n = 0, len(command)

    def flush() -> None:
        text = " ".join("".join(current).split())
        if text:
            segments.append(text)
        current.clear()

    while i < n:
        char = command[i]
        if quote == "'":
            current.append(char)
            quote = None if char == "'" else quote
            i += 1
            continue
        if char == "\\" and i + 1 < n:
            current.append(command[i : i + 2])
            i += 2
            continue
        if quote == '"':
            if char == "`" or command.startswith("$(", i):
                risky = True
            current.append(char)
            quote = None if char == '"' else quote
            i += 1
            continue
        if char in "'\"":
            quote = char
            current.append(char)
        elif char == "`" or command.startswith(("$(", "<(", ">("), i) or char in "(){}":
            risky = True
            current.append(char)
        elif char == ">" or (char == "&" and command.startswith("&>", i)):
            end, harmless = _redirection(command, i)
            risky = risky or not harmless
            current.append(command[i:end])
            i = end
            continue
        elif char in ";&|\n":
            flush()
        else:
            current.append(char)
        i += 1
    if quote is not None:
        risky = True
    flush()
    return segments, risky


def _redirection(command: str, start: int) -> tuple[int, bool]:
    """Where an output redirection starting at `start` ends, and whether it only touches fds or /dev/null."""
    i = start + (2 if command.startswith("&>", start) else 1)
    if command.startswith(">", i):
        i += 1
    if command.startswith("&", i) and i + 1 < len(command) and (command[i + 1].isdigit() or command[i + 1] == "-"):
        return i + 2, True
    j = i
    while j < len(command) and command[j] in " \t":
        j += 1
    target = re.match(r"/dev/null(?=$|[\s;&|)])", command[j:])
    if target:
        return j + target.end(), True
    return i, False


def _command_parts_loose(command: str) -> list[str]:
    """Every plausible sub-command, ignoring quotes, for deny and ask rules."""
    parts: list[str] = []
    for piece in re.split(r"\$\(|[;&|\n()`{}]", command):
        text = " ".join(piece.split())
        while text:
            parts.append(text)
            stripped = _strip_prefix(text)
            if stripped == text:
                break
            text = stripped
    return parts


def _strip_prefix(text: str) -> str:
    assignment = _ENV_ASSIGNMENT.match(text)
    if assignment:
        return text[assignment.end() :]
    first, _, rest = text.partition(" ")
    if first in _WRAPPERS:
        # `sudo -u x cmd`: drop options too, so the real command is what rules see.
        words = rest.split(" ")
        while words and words[0].startswith("-"):
            words.pop(0)
        return " ".join(words)
    return text


def _normalise_path(summary: str) -> str:
    text = summary.strip()
    return posixpath.normpath(text) if text else ""


def _has_wildcard(pattern: str) -> bool:
    return re.search(r"(?<!\\)\*", pattern) is not None


def _escape_star(text: str) -> str:
    return text.replace("\\", "\\\\").replace("*", "\\*")


@lru_cache(maxsize=512)
def _star_regex(pattern: str) -> re.Pattern[str]:
    """`*` matches anything (spaces and slashes too); a trailing `:*` means "this command, any arguments"."""
    word_prefix = pattern.endswith(":*") and not pattern.endswith("\\:*")
    body = pattern[:-2] if word_prefix else pattern
    out: list[str] = []
    i = 0
    while i < len(body):
        char = body[i]
        if char == "\\" and i + 1 < len(body):
            out.append(re.escape(body[i + 1]))
            i += 2
            continue
        out.append(".*" if char == "*" else re.escape(char))
        i += 1
    source = "".join(out)
    if word_prefix:
        source += r"(?:\s.*)?"
    return re.compile(source, re.DOTALL)


@lru_cache(maxsize=512)
def _path_regex(pattern: str) -> re.Pattern[str]:
    """gitignore-style: `**` crosses directories, `*` does not; a name without `/` matches at any depth."""
    text = pattern.strip()
    anchored = text.startswith(("/", "./"))
    text = text.removeprefix("./").lstrip("/")
    if text.endswith("/"):
        text += "**"
    anchored = anchored or "/" in text.rstrip("/")
    source = glob_to_regex_source(text) if text else ""
    prefix = "" if anchored else "(?:.*/)?"
    # Naming a directory covers what is inside it, as in .gitignore.
    return re.compile(prefix + source + "(?:/.*)?", re.DOTALL)
