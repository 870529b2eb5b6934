"""Gemma 4's own tool-call syntax: <|tool_call>call:NAME{key:<|"|>value<|"|>}<tool_call|>."""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from typing import Any

from agent.text_lines import one_line
from agent.toolcalls.json_calls import (
    DECODER,
    ParseError,
    TextToolCall,
    loads_lenient,
    unknown_tool,
)

__all__ = ["GEMMA_BLOCK", "parse_gemma_block"]

# Like every block form, it also ends at the next opening tag or the end of the text (see
# agent.toolcalls.text).
GEMMA_BLOCK = re.compile(r"<\|tool_call>(.*?)(?:<tool_call\|>|(?=<\|tool_call>)|\Z)", re.S)

_GEMMA_QUOTE = '<|"|>'
_GEMMA_NAME = re.compile(r"\s*(?:call\s*:)?\s*([A-Za-z_][\w.\-]*)\s*")
_BARE_LITERAL = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?(?![\w.])|true\b|false\b|null\b")
_BARE_KEY = re.compile(r"[^\s:{}\[\],\"]+")
_BARE_WORD = re.compile(r"[^,}\]]*")


class _GemmaArgs:
    """Parser for Gemma 4's call body: JSON-like, but keys may be bare and
    strings may be delimited by <|"|> instead of quotes (which lets the model
    put raw quotes and newlines inside them). Plain JSON is a subset."""

    def __init__(self, text: str, pos: int = 0) -> None:
        self.s = text
        self.i = pos

    def _ws(self) -> None:
        while self.i < len(self.s) and self.s[self.i].isspace():
            self.i += 1

    def _peek(self) -> str:
        return self.s[self.i] if self.i < len(self.s) else ""

    def _expect(self, ch: str) -> None:
        self._ws()
        if self._peek() != ch:
            got = self._peek() or "end of text"
            raise ParseError(f"expected '{ch}' at offset {self.i}, got {got!r}")
        self.i += 1

    def _gemma_string(self) -> str:
        start = self.i + len(_GEMMA_QUOTE)
        end = self.s.find(_GEMMA_QUOTE, start)
        if end < 0:
            raise ParseError('unterminated <|"|> string')
        self.i = end + len(_GEMMA_QUOTE)
        return self.s[start:end]

    def _json_scalar(self) -> Any:
        try:
            value, self.i = DECODER.raw_decode(self.s, self.i)
        except ValueError as exc:
            raise ParseError(str(exc)) from exc
        return value

    def value(self) -> Any:
        self._ws()
        if self.s.startswith(_GEMMA_QUOTE, self.i):
            return self._gemma_string()
        ch = self._peek()
        if ch == "{":
            return self.obj()
        if ch == "[":
            return self._array()
        if ch == '"':
            return self._json_scalar()
        m = _BARE_LITERAL.match(self.s, self.i)
        if m:
            return self._json_scalar()
        # An unquoted word: models drop the delimiters around simple strings.
        m = _BARE_WORD.match(self.s, self.i)
        word = m.group(0).strip() if m else ""
        if not word:
            raise ParseError(f"expected a value at offset {self.i}")
        self.i = m.end() if m else self.i
        return word

    def _key(self) -> str:
        self._ws()
        if self.s.startswith(_GEMMA_QUOTE, self.i):
            return self._gemma_string()
        if self._peek() == '"':
            key = self._json_scalar()
            if not isinstance(key, str):
                raise ParseError("object key must be a string")
            return key
        m = _BARE_KEY.match(self.s, self.i)
        if not m:
            raise ParseError(f"expected a key at offset {self.i}")
        self.i = m.end()
        return m.group(0)

    def _array(self) -> list[Any]:
        self._expect("[")
        items: list[Any] = []
        while True:
            self._ws()
            if self._peek() == "]":
                self.i += 1
                return items
            items.append(self.value())
            self._ws()
            if self._peek() == ",":
                self.i += 1
            elif self._peek() != "]":
                raise ParseError(f"expected ',' or ']' at offset {self.i}")

    def obj(self) -> dict[str, Any]:
        self._expect("{")
        out: dict[str, Any] = {}
        while True:
            self._ws()
            if self._peek() == "}":
                self.i += 1
                return out
            key = self._key()
            self._expect(":")
            out[key] = self.value()
            self._ws()
            if self._peek() == ",":
                self.i += 1
            elif self._peek() != "}":
                raise ParseError(f"expected ',' or '}}' at offset {self.i}")


def _gemma_to_json(body: str) -> str:
    """Rewrite <|"|> strings as JSON strings so json_repair can take over."""
    return re.sub(r'<\|"\|>(.*?)(?:<\|"\|>|\Z)', lambda m: json.dumps(m.group(1)), body, flags=re.S)


def _arguments(body: str, pos: int, name: str) -> tuple[Any, int]:
    """The arguments object starting at `pos` (or {} when there is none), and where it ends."""
    if not body.startswith("{", pos):
        return {}, pos
    parser = _GemmaArgs(body, pos)
    try:
        return parser.obj(), parser.i
    except ParseError as exc:
        # Fall back to repairing the rest of the block as one object.
        try:
            return loads_lenient(_gemma_to_json(body[pos:])), len(body)
        except ParseError:
            raise ParseError(f"could not parse the arguments of '{name}': {exc}") from None


def parse_gemma_block(body: str, raw: str, known: Collection[str]) -> tuple[list[TextToolCall], list[str]]:
    calls: list[TextToolCall] = []
    errors: list[str] = []
    pos = 0
    # One block normally holds one call, but tolerate several back to back.
    while pos < len(body) and body[pos:].strip():
        m = _GEMMA_NAME.match(body, pos)
        if not m:
            errors.append(f"could not read a tool name in {one_line(body[pos:], 80)!r}")
            break
        name = m.group(1)
        try:
            args, pos = _arguments(body, m.end(), name)
        except ParseError as exc:
            errors.append(str(exc))
            break
        if name not in known:
            errors.append(unknown_tool(name, known))
        elif not isinstance(args, dict):
            errors.append(f"arguments of '{name}' must be an object")
        else:
            calls.append(TextToolCall(name, args, raw))
        # Separators between back-to-back calls.
        while pos < len(body) and (body[pos].isspace() or body[pos] in ",;"):
            pos += 1
    if not calls and not errors:
        errors.append("empty tool call")
    return calls, errors
