"""A reasonable subset of .gitignore semantics, for workspaces that are not git repositories."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from tools.glob_patterns import glob_to_regex_source


@dataclass(frozen=True)
class IgnoreRule:
    regex: re.Pattern[str]
    negated: bool
    directories_only: bool


@dataclass(frozen=True)
class IgnoreRules:
    rules: tuple[IgnoreRule, ...] = ()

    @classmethod
    def from_gitignore(cls, path: Path) -> IgnoreRules:
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return cls()
        return cls.from_lines(text.splitlines())

    @classmethod
    def from_lines(cls, lines: list[str]) -> IgnoreRules:
        rules = [rule for line in lines if (rule := _parse_line(line)) is not None]
        return cls(tuple(rules))

    def is_ignored(self, relative_path: str, is_dir: bool) -> bool:
        """`relative_path` is POSIX and relative to the directory holding the .gitignore."""
        ignored = False
        # Later rules win, as in git, so every rule is consulted.
        for rule in self.rules:
            if rule.directories_only and not is_dir:
                continue
            if rule.regex.match(relative_path):
                ignored = not rule.negated
        return ignored


def _parse_line(line: str) -> IgnoreRule | None:
    text = line.rstrip()
    if not text or text.startswith("#"):
        return None
    negated = text.startswith("!")
    if negated:
        text = text[1:]
    elif text.startswith("\\"):
        text = text[1:]
    directories_only = text.endswith("/")
    text = text.rstrip("/")
    if not text:
        return None
    anchored = "/" in text
    text = text.lstrip("/")
    source = glob_to_regex_source(text)
    prefix = "" if anchored else "(?:.*/)?"
    return IgnoreRule(re.compile(prefix + source + r"\Z", re.DOTALL), negated, directories_only)
