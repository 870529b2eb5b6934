"""Words and simple commands as bash reads them, after quote removal.

A word whose value only bash can know at run time (`$X`, `$(...)`, `{a,b}`, what xargs adds
from its input) is a hole: not `literal`. The helpers here undo bash's quoting: backslashes in
unquoted words and in double quotes, and `$'...'` strings.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from dataclasses import dataclass

__all__ = [
    "ASSIGNMENT",
    "CommandAnalysis",
    "SimpleCommand",
    "Word",
    "ansi_c",
    "hides_substitution",
    "short",
    "squash",
    "unescape",
    "unescape_double",
]

# A `NAME=value` (or `NAME+=value`) word.
ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\+?=.*", re.DOTALL)
_ANSI_C_ESCAPES = {"a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n", "r": "\r", "t": "\t",
                   "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"}  # fmt: skip


@dataclass(frozen=True)
class Word:
    # After quote removal when `literal`; otherwise the source text, for people to read.
    value: str
    # False when only bash can know the value (an expansion, a substitution, a brace pattern).
    literal: bool = True
    # Written without quotes or backslashes, so it is shown as written (a glob stays a glob).
    plain: bool = True
    # Has unquoted `*`, `?` or `[`: bash may replace it with file names.
    globbing: bool = False

    def render(self) -> str:
        """The word as rules see it: quoted only where the quoting matters."""
        if self.plain or not self.literal:
            return self.value
        return shlex.quote(self.value)


@dataclass(frozen=True)
class SimpleCommand:
    words: tuple[Word, ...]
    # `NAME=value` prefixes, as written.
    assignments: tuple[str, ...] = ()
    # The command as written, whitespace squashed.
    source: str = ""

    @property
    def name(self) -> Word | None:
        return self.words[0] if self.words else None

    def text(self, *, assignments: bool = True, basename: bool = False) -> str:
        return " ".join(self._pieces(assignments, basename))

    def shape(self, *, assignments: bool = True, basename: bool = False) -> tuple[str | None, ...]:
        """The text with every hole as None, for asking whether a rule could match some value."""
        out: list[str | None] = []
        for index, (piece, word) in enumerate(self._pieces_with_words(assignments, basename)):
            if index:
                out.append(" ")
            out.append(piece if word is None or word.literal else None)
        return tuple(out)

    def _pieces(self, assignments: bool, basename: bool) -> list[str]:
        return [piece for piece, _ in self._pieces_with_words(assignments, basename)]

    def _pieces_with_words(self, assignments: bool, basename: bool) -> list[tuple[str, Word | None]]:
        pieces: list[tuple[str, Word | None]] = [(a, None) for a in self.assignments] if assignments else []
        for index, word in enumerate(self.words):
            text = word.render()
            if index == 0 and basename and word.literal and "/" in word.value:
                text = Word(posixpath.basename(word.value), plain=word.plain).render()
            pieces.append((text, word))
        return pieces


@dataclass(frozen=True)
class CommandAnalysis:
    # Every simple command the line runs: wrappers and what they wrap, shells and their scripts.
    commands: tuple[SimpleCommand, ...]
    # Why the line cannot be read with confidence; empty when it can.
    doubts: tuple[str, ...]
    # Output goes into a file (not a file descriptor or /dev/null).
    writes_files: bool
    # Commands in quoted text that bash may still run (`PS4='$(...)'`): for deny rules only.
    embedded: tuple[SimpleCommand, ...] = ()
    # The line as bash reads it: line continuations removed.
    text: str = ""

    @property
    def readable(self) -> bool:
        return not self.doubts


# -- text ------------------------------------------------------------------------------------


def squash(text: str) -> str:
    return " ".join(text.split())


def short(text: str) -> str:
    text = squash(text)
    return text if len(text) <= 40 else text[:37] + "..."


def hides_substitution(text: str) -> bool:
    """Unescaped substitution syntax left inside a node the parser calls plain text."""
    i = 0
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text[i] == "`" or text.startswith(("$(", "$[", "${"), i):
            return True
        i += 1
    return False


def unescape(text: str) -> tuple[str, str]:
    """Backslash removal in an unquoted word: (value, unquoted chars with escaped ones as NUL)."""
    value: list[str] = []
    unquoted: list[str] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char == "\\" and i + 1 < len(text):
            if text[i + 1] != "\n":
                value.append(text[i + 1])
                unquoted.append("\x00")
            i += 2
            continue
        value.append(char)
        unquoted.append(char)
        i += 1
    return "".join(value), "".join(unquoted)


def unescape_double(text: str) -> str:
    # Inside double quotes a backslash only escapes $ ` " \ and newline.
    return re.sub(r'\\([$`"\\\n])', lambda m: "" if m.group(1) == "\n" else m.group(1), text)


def ansi_c(body: str) -> str | None:
    """Decode `$'...'`; None for escapes it does not know (`\\cX`), which then count as holes."""
    out: list[str] = []
    i = 0
    while i < len(body):
        char = body[i]
        if char != "\\" or i + 1 >= len(body):
            out.append(char)
            i += 1
            continue
        code = body[i + 1]
        if code in _ANSI_C_ESCAPES:
            out.append(_ANSI_C_ESCAPES[code])
            i += 2
            continue
        number = re.match(r"[0-7]{1,3}|x[0-9A-Fa-f]{1,2}|u[0-9A-Fa-f]{1,4}|U[0-9A-Fa-f]{1,8}", body[i + 1 :])
        if number is None:
            return None
        digits = number.group()
        value = int(digits, 8) if digits[0] in "01234567" else int(digits[1:], 16)
        if value == 0:
            # bash stops the string at a NUL.
            break
        try:
            out.append(chr(value))
        except ValueError:
            return None
        i += 1 + len(digits)
    return "".join(out)
