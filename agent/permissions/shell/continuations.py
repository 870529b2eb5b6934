"""Line continuations, removed from a command line as bash removes them (see join_continuations)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tree_sitter import Node

from agent.permissions.shell.tree import heredoc_quoted, parse_tree

__all__ = ["join_continuations"]

_CONTINUATION = "\\\n"
# After these a `#` starts a comment.
_WORD_BREAKS = frozenset(" \t\n;&|()<>")
# Where bash keeps a backslash-newline as it is (tree-sitter's names for those places).
_KEEPS_CONTINUATION = frozenset({"raw_string", "ansi_c_string", "comment"})


def join_continuations(text: str) -> tuple[str, str | None]:
    """The command with its line continuations removed as bash removes them, and a doubt if any.

    bash drops every backslash-newline before it splits the line into words, except inside
    single quotes, `$'...'`, comments and here-documents with a quoted delimiter; tree-sitter
    instead ends a word there (`r\\<newline>m` would be two words, where bash runs `rm`). The
    places are found by a small scanner of bash's quoting and checked against tree-sitter's
    reading of the same text: where the two disagree, or the scanner is unsure (a continuation
    in a here-document's body or delimiter), the result comes with a doubt.
    """
    if _CONTINUATION not in text:
        return text, None
    scan = _ContinuationScanner(text)
    scan.run()
    doubt = scan.doubt or _parser_disagrees(text, scan.kept, scan.removed)
    return "".join(scan.out), doubt


@dataclass
class _Frame:
    # N: unquoted (top level or inside `$(`), S: '...', A: $'...', D: "...", B: `...`,
    # E: ${...} unquoted, F: ${...} inside double quotes, C: a comment.
    mode: str
    # Open parentheses inside `$(`, to find its end.
    depth: int = 0
    substitution: bool = False


@dataclass
class _Heredoc:
    delimiter: str
    quoted: bool
    strip_tabs: bool


class _ContinuationScanner:
    def __init__(self, text: str) -> None:
        self.text = text
        self.out: list[str] = []
        self.kept: list[int] = []
        self.removed: list[int] = []
        self.doubt: str | None = None
        self.stack = [_Frame("N")]
        self.pending: list[_Heredoc] = []

    def run(self) -> None:
        text = self.text
        i = 0
        while i < len(text):
            i = self.step(i)

    def emit(self, start: int, end: int) -> int:
        self.out.append(self.text[start:end])
        return end

    def step(self, i: int) -> int:
        """Copy what starts at `i` (dropping a removed continuation); the index after it."""
        mode = self.stack[-1].mode
        if mode == "S":
            return self.single_quoted(i)
        if mode == "C":
            return self.comment(i)
        if mode == "A":
            return self.ansi_c_quoted(i)
        return self.expanding(i)

    def single_quoted(self, i: int) -> int:
        if self.text[i] == "'":
            self.stack.pop()
        elif self.text.startswith(_CONTINUATION, i):
            self.kept.append(i)
        return self.emit(i, i + 1)

    def comment(self, i: int) -> int:
        if self.text[i] == "\n":
            # The newline itself belongs to what holds the comment.
            self.stack.pop()
            return i
        if self.text.startswith(_CONTINUATION, i):
            self.kept.append(i)
        return self.emit(i, i + 1)

    def ansi_c_quoted(self, i: int) -> int:
        char = self.text[i]
        if char == "\\":
            if self.text.startswith(_CONTINUATION, i):
                self.kept.append(i)
            return self.emit(i, i + 2)
        if char == "'":
            self.stack.pop()
        return self.emit(i, i + 1)

    def expanding(self, i: int) -> int:
        """Where a backslash escapes and substitutions open: unquoted text, "...", `...` and ${...}."""
        frame = self.stack[-1]
        char, two, mode = self.text[i], self.text[i : i + 2], frame.mode
        if char == "\\":
            if two == _CONTINUATION:
                self.removed.append(i)
                return i + 2
            return self.emit(i, i + 2)
        if mode == "B":
            if char == "`":
                self.stack.pop()
            return self.emit(i, i + 1)
        if two in ("$(", "${"):
            self.stack.append(_Frame("N", substitution=True) if two == "$(" else _Frame("F" if mode in "DF" else "E"))
            return self.emit(i, i + 2)
        if char == "`":
            self.stack.append(_Frame("B"))
            return self.emit(i, i + 1)
        if char == '"':
            if mode == "D":
                self.stack.pop()
            else:
                self.stack.append(_Frame("D"))
            return self.emit(i, i + 1)
        if mode == "D":
            return self.emit(i, i + 1)
        if mode in "EF" and char == "}":
            self.stack.pop()
            return self.emit(i, i + 1)
        if mode == "F":
            # Inside "${...}" single quotes are plain characters.
            return self.emit(i, i + 1)
        if two == "$'":
            self.stack.append(_Frame("A"))
            return self.emit(i, i + 2)
        if char == "'":
            self.stack.append(_Frame("S"))
            return self.emit(i, i + 1)
        if mode == "E":
            return self.emit(i, i + 1)
        return self.unquoted(i)

    def unquoted(self, i: int) -> int:
        text, frame, char = self.text, self.stack[-1], self.text[i]
        if char == "(" and frame.substitution:
            frame.depth += 1
        elif char == ")" and frame.substitution:
            if frame.depth == 0:
                self.stack.pop()
            else:
                frame.depth -= 1
        elif char == "#" and (not self.out or self.out[-1][-1:] in _WORD_BREAKS):
            self.stack.append(_Frame("C"))
        elif text.startswith("<<", i) and not text.startswith("<<<", i) and (i == 0 or text[i - 1] != "<"):
            self.heredoc_start(i)
            return self.emit(i, i + 2)
        elif char == "\n" and self.pending:
            return self.heredoc_bodies(i + 1)
        return self.emit(i, i + 1)

    def heredoc_start(self, i: int) -> None:
        text = self.text
        j = i + 2
        strip_tabs = text.startswith("-", j)
        j += strip_tabs
        while j < len(text) and text[j] in " \t":
            j += 1
        word: list[str] = []
        quoted = False
        quote = ""
        while j < len(text):
            char = text[j]
            if text.startswith(_CONTINUATION, j):
                self.doubt = "a line continuation in a here-document delimiter"
            if quote:
                if char == quote:
                    quote = ""
                else:
                    word.append(char)
            elif char in "'\"":
                quote, quoted = char, True
            elif char == "\\" and j + 1 < len(text):
                quoted = True
                word.append(text[j + 1])
                j += 1
            elif char in " \t\n;&|<>()":
                break
            else:
                word.append(char)
            j += 1
        self.pending.append(_Heredoc("".join(word), quoted, strip_tabs))

    def heredoc_bodies(self, start: int) -> int:
        """After the newline that ends the line with `<<`: copy each pending body to its delimiter."""
        text = self.text
        self.out.append("\n")
        i = start
        for heredoc in self.pending:
            while i < len(text):
                end = text.find("\n", i)
                end = len(text) if end < 0 else end
                line = text[i:end]
                if (line.lstrip("\t") if heredoc.strip_tabs else line) == heredoc.delimiter:
                    i = self.emit(i, min(end + 1, len(text)))
                    break
                escaped = len(line) - len(line.rstrip("\\"))
                if end < len(text) and escaped % 2 == 1:
                    if heredoc.quoted:
                        self.kept.append(end - 1)
                        i = self.emit(i, end + 1)
                    else:
                        # bash joins the lines, which also changes where the body may end.
                        self.doubt = "a line continuation in a here-document"
                        self.removed.append(end - 1)
                        self.emit(i, end - 1)
                        i = end + 1
                    continue
                i = self.emit(i, min(end + 1, len(text)))
        self.pending = []
        return i


def _parser_disagrees(text: str, kept: Sequence[int], removed: Sequence[int]) -> str | None:
    """Whether tree-sitter puts a continuation the scanner placed somewhere else (quoted or not)."""
    root = parse_tree(text)
    if root is None:
        return None
    keeps = set(kept)
    for index in sorted((*kept, *removed)):
        offset = len(text[:index].encode("utf-8", "surrogatepass"))
        node: Node | None = root.descendant_for_byte_range(offset, offset + 1)
        protected = False
        while node is not None:
            if node.type in _KEEPS_CONTINUATION or (node.type == "heredoc_body" and _quoted_heredoc(node)):
                protected = True
                break
            node = node.parent
        if protected != (index in keeps):
            return "a line continuation whose quoting it cannot place"
    return None


def _quoted_heredoc(body: Node) -> bool:
    parent = body.parent
    starts = [c for c in parent.children if c.type == "heredoc_start"] if parent is not None else []
    return any(heredoc_quoted(start) for start in starts)
