"""Permission modes and allow / ask / deny rules for tool calls.

Rules are written as in Claude Code: `bash(git status*)`, `edit(src/**)`, `view`, `mcp__git__*`.
Before the parentheses is a glob on the tool name; inside is a pattern on the call: the command
for bash, the workspace-relative path for file tools, the one-line call summary otherwise.

Order of precedence: a deny rule wins; read-only mode refuses every tool that writes, whatever
the allow rules say (bash runs there only when it is sandboxed read-only); below full-auto, file
tools may not write inside `.git` and must ask to change `.localagent.toml` or `.mcp.json`; then
an ask rule; then an allow rule; then the mode's default.

Rules match what a call touches, not only what it says. A file path matches as written and as
resolved in the workspace (symlinks followed); deny and ask rules stop a call if either matches,
allow rules only look at the resolved path and never allow one outside the workspace. A deny or
ask rule on paths for one reading tool (`view(secret/**)`) is a rule on reading those paths, so it
holds for grep and glob too; a search over a directory that holds files such a rule covers asks
(the search would read them), unless none of the files it would read there is covered. A bash
command is read through wrappers, quoting and command strings (see agent.shell_commands): a deny
or ask rule stops it if any command it runs matches, an allow rule needs every one matched. A
command that cannot be read with confidence is never allowed by a pattern and, when a deny or
ask rule might apply to it, it asks.

Patterns are matched by a small automaton, in time linear in the text, so no pattern (even one
from a workspace's own config) can make a decision slow.
"""

from __future__ import annotations

import fnmatch
import os
import posixpath
import re
import textwrap
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal, get_args

from agent.errors import AgentError
from agent.path_targets import PathTarget, path_target
from agent.shell_commands import CommandAnalysis, analyse
from tools.file_listing import ALWAYS_SKIPPED_DIRS
from tools.glob_patterns import _class_end, _translate_class

__all__ = [
    "Action",
    "Decision",
    "FILE_EDIT_TOOLS",
    "PATH_TOOLS",
    "READ_TOOLS",
    "SEARCH_TOOLS",
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
# Tools that read files under a `path` argument (the workspace when it is left out).
SEARCH_TOOLS = frozenset({"grep", "glob"})
# A deny or ask rule on paths for any of these covers reading those paths with each of them.
READ_TOOLS = frozenset({"view"}) | SEARCH_TOOLS
# A search checks at most this many entries for covered files before it gives up and asks.
_SEARCH_CHECK_LIMIT = 20_000

# Commands whose second word names what they do (`git push` is not `git status`).
_SUBCOMMAND_PROGRAMS = frozenset(
    {"git", "npm", "npx", "pnpm", "yarn", "cargo", "go", "uv", "pip", "pip3", "poetry", "docker", "kubectl",
     "make", "dotnet", "gradle", "mvn", "bun", "deno", "conda", "brew", "apt", "apt-get", "gh", "hatch", "just"}
)  # fmt: skip
# Wrappers that run the rest of the line as a command; the loose reading for deny rules strips them.
_WRAPPERS = ("sudo", "command", "exec", "nohup", "time", "env", "nice", "xargs", "doas", "setsid", "stdbuf", "strace",
             "ltrace", "valgrind", "catchsegv", "fakeroot", "eatmydata", "proxychains", "proxychains4", "chronic",
             "unbuffer", "dbus-run-session", "firejail", "systemd-run", "nsenter", "unshare", "setpriv", "numactl",
             "watch", "caffeinate", "pkexec", "prlimit")  # fmt: skip
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
    # What the user can do to allow it, where the usual advice (a mode or an allow rule) would not help.
    remedy: str | None = None


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
    def __init__(
        self, mode: str | PermissionMode, rules: PermissionRules | None = None, *, bash_sandboxed: bool = False
    ) -> None:
        self.mode = PermissionMode.parse(mode)
        self.rules = rules if rules is not None else PermissionRules()
        # Bash runs under a read-only sandbox in read-only mode, so it need not be refused there.
        self.bash_sandboxed = bash_sandboxed

    def with_mode(self, mode: str | PermissionMode, *, bash_sandboxed: bool | None = None) -> PermissionPolicy:
        """The same rules under another mode; the sandbox flag stays unless given."""
        sandboxed = self.bash_sandboxed if bash_sandboxed is None else bash_sandboxed
        return PermissionPolicy(mode, self.rules, bash_sandboxed=sandboxed)

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
        call = _CallView.of(tool_name, call_summary, workspace, arguments)

        def made(action: Action, reason: str, rule: Rule | None = None, remedy: str | None = None) -> Decision:
            return Decision(action, reason, tool_name, call_summary, rule.text if rule else None, remedy)

        denied = _first_restricting(self.rules.deny, call)
        if denied is not None:
            return made("deny", f"denied by rule {denied.text}", denied)
        sandboxed = self.mode is PermissionMode.READ_ONLY and tool_name == BASH_TOOL and self.bash_sandboxed
        if self.mode is PermissionMode.READ_ONLY and not reads_only and not sandboxed:
            return made("deny", f"read-only mode: {tool_name} is not allowed")
        guarded = _guarded_write(call) if self.mode is not PermissionMode.FULL_AUTO else None
        if guarded is not None:
            return made(guarded.action, guarded.reason, remedy=guarded.remedy)
        unsure = _rules_cannot_tell(self.rules, call)
        if unsure is not None:
            return made("ask", unsure, remedy=_SEARCH_REMEDY if call.search is not None else _UNREADABLE_REMEDY)
        asked = _first_restricting(self.rules.ask, call)
        if asked is not None:
            return made("ask", f"rule {asked.text} asks for approval", asked)
        if sandboxed:
            return made("allow", "read-only sandbox")
        allowing = _allowing_rules(self.rules.allow, call)
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


_UNREADABLE_REMEDY = (
    "approve it in an interactive session; a plainer command (no variables as command names, eval or "
    "generated scripts) can be checked against the rules instead"
)


def resolve_without_person(decision: Decision) -> Decision:
    """For headless runs: what would ask is denied, telling the model why and what would allow it."""
    if decision.action != "ask":
        return decision
    tool = decision.tool_name or "this call"
    if decision.remedy is not None:
        remedy = decision.remedy
    elif decision.rule is not None:
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
        decision.remedy,
    )


def rule_for_call(tool_name: str, summary: str) -> str:
    """The rule an "allow always" answer adds: a command prefix for bash, the exact path for files."""
    if tool_name == BASH_TOOL:
        command = summary.strip()
        analysis = analyse(command)
        single = analysis.commands[0] if len(analysis.commands) == 1 else None
        if single is None or not single.words or single.assignments or not analysis.readable or analysis.writes_files:
            # Compound, wrapped or tricky commands are only ever allowed again verbatim.
            return f"bash({_escape_star(command)})"
        words = [word.render() for word in single.words]
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


# -- what a call touches ----------------------------------------------------------------------


@dataclass(frozen=True)
class _CallView:
    """A call as the rules see it: the bash command read through, or the file path resolved."""

    tool_name: str
    summary: str
    # For file tools, the file; for grep and glob, the file or directory searched.
    path: PathTarget | None = None
    bash: CommandAnalysis | None = None
    # Texts a bash deny or ask rule is matched against (any match stops the call).
    bash_texts: tuple[str, ...] = ()
    search: _Search | None = None
    workspace: Path | None = None

    @classmethod
    def of(cls, tool_name: str, summary: str, workspace: Path | None, arguments: Mapping[str, Any] | None) -> _CallView:
        if tool_name == BASH_TOOL:
            analysis = analyse(summary.strip())
            return cls(tool_name, summary, bash=analysis, bash_texts=_bash_texts(summary, analysis))
        if tool_name in PATH_TOOLS:
            return cls(tool_name, summary, path=path_target(summary, workspace, arguments))
        if tool_name in SEARCH_TOOLS:
            given = arguments or {}
            raw = given.get("path")
            where = raw if isinstance(raw, str) and raw.strip() else "."
            target = path_target(where, workspace, {"path": where})
            return cls(tool_name, summary, path=target, search=_Search.of(tool_name, given), workspace=workspace)
        return cls(tool_name, summary)


@dataclass(frozen=True)
class _Search:
    """Which files under its path a grep or glob call reads: those its pattern lets through."""

    # grep's `glob` without a `/`: matched against the file name.
    name_glob: str | None = None
    # glob's pattern, or grep's `glob` with a `/`: matched against the path below the one searched.
    path_glob: str | None = None

    @classmethod
    def of(cls, tool_name: str, arguments: Mapping[str, Any]) -> _Search:
        if tool_name == "glob":
            pattern = arguments.get("pattern")
            if not isinstance(pattern, str) or not pattern:
                return cls()
            while pattern.startswith("./"):
                pattern = pattern[2:]
            return cls(path_glob=pattern)
        glob = arguments.get("glob")
        if not isinstance(glob, str) or not glob:
            return cls()
        return cls(name_glob=glob) if "/" not in glob else cls(path_glob=glob.lstrip("/"))

    def lets_through(self, name: str, below: frozenset[int] | None) -> bool:
        if self.name_glob is not None and not _glob_pattern(self.name_glob).fullmatch(name):
            return False
        if self.path_glob is not None and below is not None:
            pattern = _glob_pattern(self.path_glob)
            return pattern.accepts(pattern.advance(below, name))
        return True


def _bash_texts(summary: str, analysis: CommandAnalysis) -> tuple[str, ...]:
    # Both as written and as bash reads it (line continuations joined).
    texts = [summary.strip(), analysis.text, *_command_parts_loose(summary), *_command_parts_loose(analysis.text)]
    for command in (*analysis.commands, *analysis.embedded):
        texts += [
            command.source,
            command.text(),
            command.text(assignments=False),
            command.text(assignments=False, basename=True),
        ]
    return tuple(dict.fromkeys(text for text in texts if text))


@dataclass(frozen=True)
class _Guard:
    action: Action
    reason: str
    remedy: str | None = None


def _guarded_write(call: _CallView) -> _Guard | None:
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
            "make the change by hand or rerun with --mode full-auto",
        )  # fmt: skip
    return None


# -- matching ---------------------------------------------------------------------------------


def _restricts(rule: Rule, call: _CallView) -> bool:
    """Whether a deny or ask rule speaks about this call: its tool, or reading paths with any reading tool."""
    if rule.covers_tool(call.tool_name):
        return True
    # `view(secret/**)` is about reading secret/: grep and glob read it too (and the other way round).
    return rule.pattern is not None and call.tool_name in READ_TOOLS and any(map(rule.covers_tool, READ_TOOLS))


def _first_restricting(rules: list[Rule], call: _CallView) -> Rule | None:
    """Deny and ask rules: a match anywhere in the call is enough (err on the side of stopping)."""
    for rule in rules:
        if not _restricts(rule, call):
            continue
        if rule.pattern is None:
            return rule
        if call.bash is not None:
            if any(_star_pattern(rule.pattern).fullmatch(text) for text in call.bash_texts):
                return rule
        elif call.path is not None:
            pattern = _path_pattern(rule.pattern)
            if any(pattern.fullmatch(form) for form in call.path.spellings):
                return rule
            # grep or glob in secret/ with `view(secret/**)`: all it could read is covered.
            if call.search is not None and any(pattern.covers_all(_below(form)) for form in call.path.spellings):
                return rule
        elif _star_pattern(rule.pattern).fullmatch(call.summary.strip()):
            return rule
    return None


def _rules_cannot_tell(rules: PermissionRules, call: _CallView) -> str | None:
    """Why a deny or ask rule might apply without the policy being able to tell, if it might."""
    if call.search is not None:
        return _search_reaches(rules, call)
    analysis = call.bash
    if analysis is None:
        return None
    restricting = [r for r in (*rules.deny, *rules.ask) if r.pattern is not None and r.covers_tool(call.tool_name)]
    if not restricting:
        return None
    if analysis.doubts:
        return f"a rule may apply, but this command cannot be read with confidence: {analysis.doubts[0]}"
    for command in analysis.commands:
        if all(word.literal for word in command.words):
            continue
        shapes = (command.shape(assignments=False, basename=True), command.shape())
        for rule in restricting:
            if any(_could_match(rule.pattern or "", shape) for shape in shapes):
                shown = textwrap.shorten(command.text(), 60, placeholder=" ...")
                return f"rule {rule.text} may apply to `{shown}`, depending on values known only when it runs"
    return None


# A rule's pattern and where it stands (its set of states) after a path.
_Forms = list[tuple["_Wildcard", frozenset[int]]]
_SEARCH_REMEDY = (
    "approve it in an interactive session; a search with a narrower path or glob that leaves out the covered "
    "files needs no approval"
)


def _search_reaches(rules: PermissionRules, call: _CallView) -> str | None:
    """Why a grep or glob call needs approval: it would read files that a deny or ask rule covers."""
    target = call.path
    if target is None:
        return None
    restricting = [r for r in (*rules.deny, *rules.ask) if r.pattern is not None and _restricts(r, call)]
    if not restricting:
        return None
    # The rules that could cover something below the path at all, as written or where it lands,
    # each with where its pattern stands after that path.
    candidates: list[tuple[Rule, _Forms]] = []
    for rule in restricting:
        pattern = _path_pattern(rule.pattern or "")
        forms = [(pattern, at) for base in target.spellings if (at := pattern.advance(pattern.start, _below(base)))]
        if forms:
            candidates.append((rule, forms))
    if not candidates:
        return None
    where = target.resolved or target.written
    if call.workspace is None or target.resolved is None:
        if call.workspace is not None:
            # It lands outside the workspace, where the tool refuses to search.
            return None
        rule = candidates[0][0]
        return f"{call.tool_name} searches {where}, where rule {rule.text} may cover files it would read"
    root = os.path.realpath(call.workspace)
    base = root if target.resolved == "." else os.path.join(root, target.resolved)
    if not os.path.isdir(base):
        # A file is judged by its own path (above); a path that is not there fails in the tool.
        return None
    found = _covered_file(base, call.search or _Search(), candidates)
    if found is None:
        return None
    rule, example = found
    if example is None:
        return (
            f"{call.tool_name} searches {where}, which holds more than {_SEARCH_CHECK_LIMIT} entries; "
            f"rule {rule.text} may cover some it would read"
        )
    shown = posixpath.join(target.resolved, example) if target.resolved != "." else example
    return f"{call.tool_name} searches {where}, which holds {shown}, covered by rule {rule.text}"


def _below(base: str) -> str:
    """The start of every path below `base` (the workspace itself for ".")."""
    return "" if base == "." else base.rstrip("/") + "/"


def _covered_file(base: str, search: _Search, candidates: list[tuple[Rule, _Forms]]) -> tuple[Rule, str | None] | None:
    """A file below `base` the search would read and a rule covers: (rule, its path below base).

    The walk is the tools' own listing, widened: symlinks are not followed (the tools neither
    list nor follow them) but are checked by name, and nothing is skipped for .gitignore. A
    directory no rule (or no part of the search's glob) can reach below is not entered. After
    `_SEARCH_CHECK_LIMIT` entries the answer is (rule, None): it cannot tell.
    """
    glob = _glob_pattern(search.path_glob) if search.path_glob is not None else None
    stack: list[tuple[str, str, list[tuple[Rule, _Forms]], frozenset[int] | None]] = [
        (base, "", candidates, glob.start if glob is not None else None)
    ]
    seen = 0
    while stack:
        directory, below, live, globbed = stack.pop()
        try:
            with os.scandir(directory) as entries:
                listed = sorted(entries, key=lambda entry: entry.name)
        except OSError:
            continue
        for entry in listed:
            seen += 1
            if seen > _SEARCH_CHECK_LIMIT:
                return live[0][0], None
            name = entry.name
            try:
                is_directory = entry.is_dir(follow_symlinks=False)
            except OSError:
                is_directory = False
            if is_directory:
                if name in ALWAYS_SKIPPED_DIRS:
                    continue
                inner = glob.advance(globbed, name + "/") if glob is not None and globbed is not None else None
                if glob is not None and not inner:
                    continue
                deeper = [
                    (rule, kept)
                    for rule, forms in live
                    if (kept := [(p, moved) for p, states in forms if (moved := p.advance(states, name + "/"))])
                ]
                if deeper:
                    stack.append((entry.path, below + name + "/", deeper, inner))
                continue
            if not search.lets_through(name, globbed):
                continue
            for rule, forms in live:
                if any(p.accepts(p.advance(states, name)) for p, states in forms):
                    return rule, below + name
    return None


def _allowing_rules(rules: list[Rule], call: _CallView) -> list[Rule]:
    """Allow rules: every part of the call must be covered, or nothing is allowed."""
    relevant = [rule for rule in rules if rule.covers_tool(call.tool_name)]
    whole = next((rule for rule in relevant if rule.pattern is None), None)
    if whole is not None:
        # A rule without a pattern reads nothing, so nothing about the call can fool it.
        return [whole]
    if call.bash is not None:
        # A pattern cannot vouch for a command the policy cannot read.
        if not call.bash.readable:
            return []
        return _allowing_bash(relevant, call.summary.strip(), call.bash)
    if call.path is not None:
        # Only where the call lands counts, and never outside the workspace.
        landed = call.path.resolved
        if landed is None:
            return []
        return [r for r in relevant if r.pattern is not None and _path_pattern(r.pattern).fullmatch(landed)][:1]
    text = call.summary.strip()
    return [r for r in relevant if r.pattern is not None and _star_pattern(r.pattern).fullmatch(text)][:1]


def _allowing_bash(rules: list[Rule], command: str, analysis: CommandAnalysis) -> list[Rule]:
    # A rule written out as the exact command allows exactly that command, however complex.
    for rule in rules:
        literal = rule.pattern is not None and not _has_wildcard(rule.pattern)
        if literal and rule.pattern is not None and _star_pattern(rule.pattern).fullmatch(command):
            return [rule]
    if analysis.writes_files or not analysis.commands:
        return []
    used: list[Rule] = []
    # Wrappers and what they run are all commands here: `sudo rm x` needs both sudo and rm allowed.
    for simple in analysis.commands:
        text = simple.text()
        match = next((r for r in rules if r.pattern is not None and _star_pattern(r.pattern).fullmatch(text)), None)
        if match is None:
            return []
        if match not in used:
            used.append(match)
    return used


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


# A wildcard position when star patterns are compared with one another.
_ANY = None


def _could_match(pattern: str, shape: Sequence[str | None]) -> bool:
    """Whether some value of the holes (None) in `shape` makes the star pattern match it."""
    text: list[str | None] = []
    for piece in shape:
        text.extend([_ANY] if piece is None else list(piece))
    return any(_overlap(alternative, text) for alternative in _pattern_tokens(pattern))


@lru_cache(maxsize=512)
def _pattern_tokens(pattern: str) -> tuple[tuple[str | None, ...], ...]:
    """A rule pattern as characters and wildcards; `x:*` gives two alternatives (`x`, `x *`)."""
    word_prefix = pattern.endswith(":*") and not pattern.endswith("\\:*")
    body = pattern[:-2] if word_prefix else pattern
    tokens: list[str | None] = []
    i = 0
    while i < len(body):
        if body[i] == "\\" and i + 1 < len(body):
            tokens.append(body[i + 1])
            i += 2
            continue
        tokens.append(_ANY if body[i] == "*" else body[i])
        i += 1
    if word_prefix:
        return (tuple(tokens), (*tokens, " ", _ANY))
    return (tuple(tokens),)


def _overlap(a: Sequence[str | None], b: Sequence[str | None]) -> bool:
    """Whether two star patterns share a string: a walk over pairs of positions."""
    seen: set[tuple[int, int]] = set()
    queue = deque([(0, 0)])
    while queue:
        i, j = queue.popleft()
        if (i, j) in seen:
            continue
        seen.add((i, j))
        if i == len(a) and j == len(b):
            return True
        steps: list[tuple[int, int]] = []
        if i < len(a) and a[i] is _ANY:
            steps += [(i + 1, j)] + ([(i, j + 1)] if j < len(b) else [])
        if j < len(b) and b[j] is _ANY:
            steps += [(i, j + 1)] + ([(i + 1, j)] if i < len(a) else [])
        if i < len(a) and j < len(b) and a[i] is not _ANY and a[i] == b[j]:
            steps.append((i + 1, j + 1))
        queue.extend(step for step in steps if step not in seen)
    return False


# -- wildcard patterns ------------------------------------------------------------------------

# A test on one character: that character, any character (None), or a predicate.
_Test = str | Callable[[str], bool] | None
# Lazily built automaton steps kept per pattern; past this the cache starts over.
_STEP_CACHE_LIMIT = 4096


def _not_slash(char: str) -> bool:
    return char != "/"


class _Wildcard:
    """A rule pattern run as an automaton over the text, one character at a time.

    Matching takes time linear in the text (times the pattern's size), whatever the pattern:
    `*a*a*a*a*b` cannot backtrack as a regular expression would. The sets of positions reached
    are cached as they are met, so repeated matching costs a dictionary look-up per character.
    """

    def __init__(self) -> None:
        self.edges: list[list[tuple[_Test, int]]] = [[]]
        self.skips: list[list[int]] = [[]]
        self.end = 0
        self.accepting: frozenset[int] = frozenset()
        self.start: frozenset[int] = frozenset()
        self.cache: dict[tuple[frozenset[int], str], frozenset[int]] = {}

    # -- building

    def _state(self) -> int:
        self.edges.append([])
        self.skips.append([])
        return len(self.edges) - 1

    def one(self, test: _Test) -> None:
        """Exactly one character that passes `test`."""
        state = self._state()
        self.edges[self.end].append((test, state))
        self.end = state

    def many(self, test: _Test) -> None:
        """Any number of characters that pass `test`."""
        state = self._state()
        self.skips[self.end].append(state)
        self.edges[state].append((test, state))
        self.end = state

    def directories(self) -> None:
        """`(?:[^/]*/)*`: nothing, or whole directories each ending in `/`."""
        boundary, inside = self._state(), self._state()
        self.skips[self.end].append(boundary)
        self.edges[boundary] += [("/", boundary), (_not_slash, inside)]
        self.edges[inside] += [("/", boundary), (_not_slash, inside)]
        self.end = boundary

    def optional_directories(self) -> None:
        """`(?:.*/)?`: nothing, or anything that ends in `/`."""
        after, inside = self._state(), self._state()
        self.skips[self.end] += [after, inside]
        self.edges[inside] += [(None, inside), ("/", after)]
        self.end = after

    def finish(self, tail: str | Callable[[str], bool] | None = None) -> _Wildcard:
        """Accept at the end; with a `tail` test, also after one such character and then anything."""
        accepting = {self.end}
        if tail is not None:
            rest = self._state()
            self.edges[self.end].append((tail, rest))
            self.edges[rest].append((None, rest))
            accepting.add(rest)
        self.accepting = frozenset(accepting)
        self.start = self._closure({0})
        return self

    # -- running

    def _closure(self, states: Iterable[int]) -> frozenset[int]:
        seen = set(states)
        stack = list(seen)
        while stack:
            for nxt in self.skips[stack.pop()]:
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append(nxt)
        return frozenset(seen)

    def advance(self, states: frozenset[int], text: str) -> frozenset[int]:
        for char in text:
            if not states:
                break
            key = (states, char)
            found = self.cache.get(key)
            if found is None:
                reached = set()
                for state in states:
                    for test, nxt in self.edges[state]:
                        if test is None or (test == char if isinstance(test, str) else test(char)):
                            reached.add(nxt)
                found = self._closure(reached)
                if len(self.cache) >= _STEP_CACHE_LIMIT:
                    self.cache.clear()
                self.cache[key] = found
            states = found
        return states

    def accepts(self, states: frozenset[int]) -> bool:
        return not self.accepting.isdisjoint(states)

    def fullmatch(self, text: str) -> bool:
        return self.accepts(self.advance(self.start, text))

    def covers_all(self, prefix: str) -> bool:
        """Whether every text that starts with `prefix` matches: an accepting state that takes anything."""
        states = self.advance(self.start, prefix)
        return any(state in self.accepting and (None, state) in self.edges[state] for state in states)


@lru_cache(maxsize=512)
def _star_pattern(pattern: str) -> _Wildcard:
    """`*` matches anything (spaces and slashes too); a trailing `:*` means "this command, any arguments"."""
    word_prefix = pattern.endswith(":*") and not pattern.endswith("\\:*")
    body = pattern[:-2] if word_prefix else pattern
    wildcard = _Wildcard()
    i = 0
    while i < len(body):
        char = body[i]
        if char == "\\" and i + 1 < len(body):
            wildcard.one(body[i + 1])
            i += 2
            continue
        if char == "*":
            wildcard.many(None)
        else:
            wildcard.one(char)
        i += 1
    return wildcard.finish(str.isspace if word_prefix else None)


@lru_cache(maxsize=512)
def _path_pattern(pattern: str) -> _Wildcard:
    """gitignore-style: `**` crosses directories, `*` does not; a name without `/` matches at any depth."""
    text = pattern.strip()
    anchored = text.startswith(("/", "./"))
    text = text.removeprefix("./").lstrip("/")
    if text.endswith("/"):
        text += "**"
    anchored = anchored or "/" in text.rstrip("/")
    wildcard = _Wildcard()
    if not anchored:
        wildcard.optional_directories()
    _glob_steps(wildcard, text)
    # Naming a directory covers what is inside it, as in .gitignore.
    return wildcard.finish("/")


@lru_cache(maxsize=512)
def _glob_pattern(pattern: str) -> _Wildcard:
    """A glob as the glob tool and grep's `glob` read it (tools.glob_patterns), over a whole path."""
    wildcard = _Wildcard()
    _glob_steps(wildcard, pattern)
    return wildcard.finish()


def _glob_steps(wildcard: _Wildcard, pattern: str) -> None:
    """The steps of tools.glob_patterns.glob_to_regex_source, as automaton states."""
    i, n = 0, len(pattern)
    while i < n:
        if pattern.startswith("**/", i):
            wildcard.directories()
            i += 3
        elif pattern.startswith("**", i) and i + 2 == n:
            wildcard.many(None)
            i += 2
        elif pattern[i] == "*":
            while i < n and pattern[i] == "*":
                i += 1
            wildcard.many(_not_slash)
        elif pattern[i] == "?":
            wildcard.one(_not_slash)
            i += 1
        elif pattern[i] == "[":
            end = _class_end(pattern, i)
            test = _class_test(pattern[i + 1 : end]) if end >= 0 else None
            if test is None:
                wildcard.one("[")
                i += 1
            else:
                wildcard.one(test)
                i = end + 1
        elif pattern[i] == "\\" and i + 1 < n:
            wildcard.one(pattern[i + 1])
            i += 2
        else:
            wildcard.one(pattern[i])
            i += 1


def _class_test(body: str) -> Callable[[str], bool] | None:
    try:
        # One character class matched against one character: nothing to backtrack over.
        compiled = re.compile(_translate_class(body), re.DOTALL)
    except re.error:
        return None
    return lambda char: compiled.fullmatch(char) is not None
