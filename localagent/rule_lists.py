"""Permission rule lists as Claude Code's ``--allowedTools`` takes them: comma- or space-separated,
where a rule's parentheses keep what is inside them together (``Bash(git log:*)`` is one rule)."""

from __future__ import annotations

SEPARATORS = frozenset(", \t\n")


def split_rules(text: str) -> list[str]:
    """``"Read,Edit Bash(git log:*)"`` -> ``["Read", "Edit", "Bash(git log:*)"]``.

    A comma or blank outside parentheses ends a rule; inside them it belongs to the pattern. An
    unbalanced ``(`` keeps the rest as one rule, so the rule parser names the mistake."""
    rules: list[str] = []
    current: list[str] = []
    depth = 0
    for char in text:
        if char in SEPARATORS and depth == 0:
            if current:
                rules.append("".join(current))
                current = []
            continue
        if char == "(":
            depth += 1
        elif char == ")" and depth > 0:
            depth -= 1
        current.append(char)
    if current:
        rules.append("".join(current))
    return rules
