"""Which rules match a call: deny and ask rules on any part of it, allow rules on all of it.

A deny or ask rule stops a call if either spelling of its path matches, or any command a bash
line runs; an allow rule only looks at where a path lands (never outside the workspace) and
needs every command of a line matched. A command that cannot be read with confidence is never
allowed by a pattern and, when a deny or ask rule might apply to it, the policy cannot tell.
"""

from __future__ import annotations

import textwrap

from agent.permissions.call_view import CallView
from agent.permissions.rules import PermissionRules, Rule
from agent.permissions.search_reach import prefix_below, search_reaches
from agent.permissions.shell.commands import CommandAnalysis
from agent.permissions.wildcards import could_match, has_wildcard, path_pattern, star_pattern

__all__ = ["allowing_rules", "first_restricting", "rules_cannot_tell"]


def first_restricting(rules: list[Rule], call: CallView) -> Rule | None:
    """Deny and ask rules: a match anywhere in the call is enough (err on the side of stopping)."""
    for rule in rules:
        if not rule.restricts(call.tool_name):
            continue
        if rule.pattern is None:
            return rule
        if call.bash is not None:
            if any(star_pattern(rule.pattern).fullmatch(text) for text in call.bash_texts):
                return rule
        elif call.path is not None:
            pattern = path_pattern(rule.pattern)
            if any(pattern.fullmatch(form) for form in call.path.spellings):
                return rule
            # grep or glob in secret/ with `view(secret/**)`: all it could read is covered.
            searched = call.path.spellings if call.search is not None else ()
            if any(pattern.covers_all(prefix_below(form)) for form in searched):
                return rule
        elif star_pattern(rule.pattern).fullmatch(call.summary.strip()):
            return rule
    return None


def rules_cannot_tell(rules: PermissionRules, call: CallView) -> str | None:
    """Why a deny or ask rule might apply without the policy being able to tell, if it might."""
    if call.search is not None:
        return search_reaches(rules, call)
    analysis = call.bash
    if analysis is None:
        return None
    restricting = rules.restricting_patterns(call.tool_name)
    if not restricting:
        return None
    if analysis.doubts:
        return f"a rule may apply, but this command cannot be read with confidence: {analysis.doubts[0]}"
    for command in analysis.commands:
        if all(word.literal for word in command.words):
            continue
        shapes = (command.shape(assignments=False, basename=True), command.shape())
        for rule in restricting:
            if any(could_match(rule.pattern or "", shape) for shape in shapes):
                shown = textwrap.shorten(command.text(), 60, placeholder=" ...")
                return f"rule {rule.text} may apply to `{shown}`, depending on values known only when it runs"
    return None


def allowing_rules(rules: list[Rule], call: CallView) -> list[Rule]:
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
        return [r for r in relevant if r.pattern is not None and path_pattern(r.pattern).fullmatch(landed)][:1]
    text = call.summary.strip()
    return [r for r in relevant if r.pattern is not None and star_pattern(r.pattern).fullmatch(text)][:1]


def _allowing_bash(rules: list[Rule], command: str, analysis: CommandAnalysis) -> list[Rule]:
    # A rule written out as the exact command allows exactly that command, however complex.
    for rule in rules:
        literal = rule.pattern is not None and not has_wildcard(rule.pattern)
        if literal and rule.pattern is not None and star_pattern(rule.pattern).fullmatch(command):
            return [rule]
    if analysis.writes_files or not analysis.commands:
        return []
    used: list[Rule] = []
    # Wrappers and what they run are all commands here: `sudo rm x` needs both sudo and rm allowed.
    for simple in analysis.commands:
        text = simple.text()
        match = next((r for r in rules if r.pattern is not None and star_pattern(r.pattern).fullmatch(text)), None)
        if match is None:
            return []
        if match not in used:
            used.append(match)
    return used
