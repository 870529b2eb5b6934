"""The box every entry of the conversation sits in: one line above it, padded at the sides.

User prompts, answers and tool calls share it; each adds its own rules (a border, a background).
"""

from __future__ import annotations


def entry_css(widget: str, **rules: str) -> str:
    """The DEFAULT_CSS rule for the entry widget named ``widget``, with its own ``rules``
    written as keywords (``border_left="thick $accent"`` is ``border-left: thick $accent``)."""
    lines = ["height: auto", "margin: 1 0 0 0", "padding: 0 1"]
    lines += [f"{name.replace('_', '-')}: {value}" for name, value in rules.items()]
    body = "".join(f"    {line};\n" for line in lines)
    return f"{widget} {{\n{body}}}\n"
