"""Text from the model, tools, files or a server, made safe to write to a terminal.

A terminal obeys escape sequences in what it prints: an answer or a command's output could erase
the real tool line and print a fake one, hide text, retitle the window or set the clipboard (OSC
52). Every control character but newline and tab is shown as a visible escape instead (`\\x1b`,
`\\r`), and so are the bidirectional overrides that make code read differently than it runs.
"""

from __future__ import annotations

import re

_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_NAMED = {"\r": "\\r", "\x1b": "\\x1b", "\x07": "\\a", "\x08": "\\b", "\x0b": "\\v", "\x0c": "\\f"}


def _visible(match: re.Match[str]) -> str:
    char = match.group()
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def terminal_safe(text: str) -> str:
    """`text` with every control character but newline and tab shown as a visible escape."""
    return _UNSAFE.sub(_visible, text)


def one_line_safe(text: str) -> str:
    """The same, with newlines and tabs shown too: for a text that must stay on one line."""
    return terminal_safe(text).replace("\n", "\\n").replace("\t", "\\t")
