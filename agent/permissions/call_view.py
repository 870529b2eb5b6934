"""A tool call as the permission rules see it: what it touches, not only what it says.

A file path is seen as written and as resolved in the workspace (agent.permissions.path_targets); a bash
command as read through wrappers, quoting and command strings (agent.permissions.shell.commands), and also
loosely, ignoring quotes, so that a deny or ask rule errs on the side of stopping; a grep or
glob call as the path it searches and which files under it its pattern lets through.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.permissions.path_targets import PathTarget, path_target
from agent.permissions.rules import BASH_TOOL, PATH_TOOLS, SEARCH_TOOLS
from agent.permissions.shell.commands import CommandAnalysis, analyse
from agent.permissions.wildcards import glob_pattern

__all__ = ["CallView", "Search"]

# Wrappers that run the rest of the line as a command; the loose reading for deny rules strips them.
_LOOSE_WRAPPERS = ("sudo", "command", "exec", "nohup", "time", "env", "nice", "xargs", "doas", "setsid", "stdbuf", "strace",
             "ltrace", "valgrind", "catchsegv", "fakeroot", "eatmydata", "proxychains", "proxychains4", "chronic",
             "unbuffer", "dbus-run-session", "firejail", "systemd-run", "nsenter", "unshare", "setpriv", "numactl",
             "watch", "caffeinate", "pkexec", "prlimit")  # fmt: skip
_ENV_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=\S*\s+")


@dataclass(frozen=True)
class CallView:
    """A call as the rules see it: the bash command read through, or the file path resolved."""

    tool_name: str
    summary: str
    # For file tools, the file; for grep and glob, the file or directory searched.
    path: PathTarget | None = None
    bash: CommandAnalysis | None = None
    # Texts a bash deny or ask rule is matched against (any match stops the call).
    bash_texts: tuple[str, ...] = ()
    search: Search | None = None
    workspace: Path | None = None

    @classmethod
    def of(cls, tool_name: str, summary: str, workspace: Path | None, arguments: Mapping[str, Any] | None) -> CallView:
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
            return cls(tool_name, summary, path=target, search=Search.of(tool_name, given), workspace=workspace)
        return cls(tool_name, summary)


@dataclass(frozen=True)
class Search:
    """Which files under its path a grep or glob call reads: those its pattern lets through."""

    # grep's `glob` without a `/`: matched against the file name.
    name_glob: str | None = None
    # glob's pattern, or grep's `glob` with a `/`: matched against the path below the one searched.
    path_glob: str | None = None

    @classmethod
    def of(cls, tool_name: str, arguments: Mapping[str, Any]) -> Search:
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
        if self.name_glob is not None and not glob_pattern(self.name_glob).fullmatch(name):
            return False
        if self.path_glob is not None and below is not None:
            pattern = glob_pattern(self.path_glob)
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
    if first in _LOOSE_WRAPPERS:
        # `sudo -u x cmd`: drop options too, so the real command is what rules see.
        words = rest.split(" ")
        while words and words[0].startswith("-"):
            words.pop(0)
        return " ".join(words)
    return text
