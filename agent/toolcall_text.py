"""Recognise tool calls that a local model printed as plain text.

llama-server only extracts native tool calls when the chat template and its
parser agree with what the model emits. Small local models regularly print the
call into the content instead (Gemma 4's own syntax, Hermes/Qwen tags, Qwen3
coder's XML-ish form, or a fenced JSON block). This module turns those texts
back into calls so the agent loop can run them, and produces the error text
that teaches the model the expected format when it gets it wrong.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

import json_repair
import jsonschema
from jsonschema.exceptions import SchemaError, ValidationError, best_match

__all__ = [
    "TextToolCall",
    "TextParseResult",
    "parse_text_tool_calls",
    "validate_arguments",
    "format_error_feedback",
]


@dataclass
class TextToolCall:
    name: str
    arguments: dict[str, Any]
    # The exact source text of the call, so callers can log or echo it.
    raw: str


@dataclass
class TextParseResult:
    calls: list[TextToolCall] = field(default_factory=list)
    text_without_calls: str = ""
    errors: list[str] = field(default_factory=list)


# --- patterns -----------------------------------------------------------------
# Every block form also ends at the next opening tag or the end of the text:
# generation often stops right before the closing tag (it can be a stop token),
# and a missing close must not swallow the following call.
_GEMMA_BLOCK = re.compile(r"<\|tool_call>(.*?)(?:<tool_call\|>|(?=<\|tool_call>)|\Z)", re.S)
_HERMES_BLOCK = re.compile(r"<tool_call>(.*?)(?:</tool_call>|(?=<tool_call>)|\Z)", re.S)
_FUNCTION_BLOCK = re.compile(
    r"<function=([^>\s]+)\s*>(.*?)(?:</function>|(?=<function=)|(?=</tool_call>)|\Z)", re.S
)
_PARAMETER = re.compile(r"<parameter=([^>]+?)\s*>(.*?)(?:</parameter>|(?=<parameter=)|\Z)", re.S)
_FENCE = re.compile(
    r"(?P<fence>`{3,})[ \t]*(?P<lang>[\w+-]*)[^\n]*\n(?P<body>.*?)\n?[ \t]*(?P=fence)", re.S
)
# Fence languages that may carry a JSON call; ```python etc. are left alone.
_CALL_FENCE_LANGS = {"", "json", "jsonc", "json5", "tool_call", "tool", "tool_code", "function_call"}
# In these fences the model clearly meant a call, so an unknown name is an error
# rather than "just some JSON".
_EXPLICIT_CALL_LANGS = {"tool_call", "tool", "function_call"}

_GEMMA_QUOTE = '<|"|>'
_GEMMA_NAME = re.compile(r"\s*(?:call\s*:)?\s*([A-Za-z_][\w.\-]*)\s*")
_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?")
_BARE_LITERAL = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?(?![\w.])|true\b|false\b|null\b")
_BARE_KEY = re.compile(r"[^\s:{}\[\],\"]+")
_BARE_WORD = re.compile(r"[^,}\]]*")

# strict=False lets literal newlines through inside strings, which models emit
# for multi-line file contents.
_DECODER = json.JSONDecoder(strict=False)


class _ParseError(ValueError):
    pass


@dataclass
class _Found:
    start: int
    end: int
    calls: list[TextToolCall]
    errors: list[str]


# --- small helpers ------------------------------------------------------------


def _one_line(text: str, limit: int = 200) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _loads_lenient(text: str) -> Any:
    """Strict JSON first; json_repair only as a fallback so valid input is never rewritten."""
    try:
        return _DECODER.decode(text)
    except ValueError:
        pass
    repaired = json_repair.loads(text)
    # json_repair answers "" for input it cannot make anything of.
    if repaired == "" and text.strip() not in ('""', "''"):
        raise _ParseError(f"not valid JSON: {_one_line(text, 80)!r}")
    return repaired


def _coerce_arguments(value: Any, name: str) -> dict[str, Any]:
    if value is None:
        return {}
    if isinstance(value, str):
        # Hermes-style calls sometimes double-encode arguments as a JSON string.
        if not value.strip():
            return {}
        value = _loads_lenient(value)
    if not isinstance(value, dict):
        raise _ParseError(f"arguments of '{name}' must be a JSON object, got {type(value).__name__}")
    return value


def _call_parts(obj: Any) -> tuple[str, Any] | None:
    """(name, raw arguments) of a call-shaped JSON object, else None."""
    if not isinstance(obj, dict):
        return None
    # Accept the OpenAI wire shape too: {"type": "function", "function": {...}}.
    if isinstance(obj.get("function"), dict) and "name" not in obj:
        obj = obj["function"]
    name = obj.get("name")
    if not isinstance(name, str) or not name:
        return None
    if "arguments" in obj:
        return name, obj["arguments"]
    if "parameters" in obj:
        return name, obj["parameters"]
    return None


def _unknown(name: str, known: Collection[str]) -> str:
    available = ", ".join(sorted(known)) or "none"
    return f"unknown tool '{name}' (available tools: {available})"


# --- Gemma 4 argument syntax --------------------------------------------------


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
            raise _ParseError(f"expected '{ch}' at offset {self.i}, got {got!r}")
        self.i += 1

    def _gemma_string(self) -> str:
        start = self.i + len(_GEMMA_QUOTE)
        end = self.s.find(_GEMMA_QUOTE, start)
        if end < 0:
            raise _ParseError("unterminated <|\"|> string")
        self.i = end + len(_GEMMA_QUOTE)
        return self.s[start:end]

    def _json_scalar(self) -> Any:
        try:
            value, self.i = _DECODER.raw_decode(self.s, self.i)
        except ValueError as exc:
            raise _ParseError(str(exc)) from exc
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
            raise _ParseError(f"expected a value at offset {self.i}")
        self.i = m.end() if m else self.i
        return word

    def _key(self) -> str:
        self._ws()
        if self.s.startswith(_GEMMA_QUOTE, self.i):
            return self._gemma_string()
        if self._peek() == '"':
            key = self._json_scalar()
            if not isinstance(key, str):
                raise _ParseError("object key must be a string")
            return key
        m = _BARE_KEY.match(self.s, self.i)
        if not m:
            raise _ParseError(f"expected a key at offset {self.i}")
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
                raise _ParseError(f"expected ',' or ']' at offset {self.i}")

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
                raise _ParseError(f"expected ',' or '}}' at offset {self.i}")


def _gemma_to_json(body: str) -> str:
    """Rewrite <|"|> strings as JSON strings so json_repair can take over."""
    return re.sub(
        r'<\|"\|>(.*?)(?:<\|"\|>|\Z)', lambda m: json.dumps(m.group(1)), body, flags=re.S
    )


def _parse_gemma_block(body: str, raw: str, known: Collection[str]) -> tuple[list[TextToolCall], list[str]]:
    calls: list[TextToolCall] = []
    errors: list[str] = []
    pos = 0
    # One block normally holds one call, but tolerate several back to back.
    while pos < len(body) and body[pos:].strip():
        m = _GEMMA_NAME.match(body, pos)
        if not m:
            errors.append(f"could not read a tool name in {_one_line(body[pos:], 80)!r}")
            break
        name = m.group(1)
        pos = m.end()
        if body.startswith("{", pos):
            parser = _GemmaArgs(body, pos)
            try:
                args: Any = parser.obj()
                pos = parser.i
            except _ParseError as exc:
                # Fall back to repairing the rest of the block as one object.
                rest = body[pos:]
                try:
                    args = _loads_lenient(_gemma_to_json(rest))
                except _ParseError:
                    errors.append(f"could not parse the arguments of '{name}': {exc}")
                    break
                pos = len(body)
        else:
            args = {}
        if name not in known:
            errors.append(_unknown(name, known))
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


# --- Qwen3-coder <function=...> form --------------------------------------------


def _string_typed(schema: Mapping[str, Any] | None, key: str) -> bool:
    if not schema:
        return False
    prop = (schema.get("properties") or {}).get(key) or {}
    return prop.get("type") == "string"


def _decode_parameter(raw_value: str, keep_raw: bool) -> Any:
    # The template writes "<parameter=k>\nvalue\n</parameter>": drop exactly that
    # one newline each side so file contents keep their own leading/trailing space.
    value = raw_value[1:] if raw_value.startswith("\n") else raw_value
    value = value[:-1] if value.endswith("\n") else value
    if keep_raw:
        return value
    probe = value.strip()
    looks_json = (
        _NUMBER.fullmatch(probe) is not None
        or probe in ("true", "false")
        or (probe.startswith("{") and probe.endswith("}"))
        or (probe.startswith("[") and probe.endswith("]"))
    )
    if looks_json:
        try:
            return _DECODER.decode(probe)
        except ValueError:
            pass
    return value


def _parse_function_body(
    name: str, body: str, raw: str, known: Collection[str], schema: Mapping[str, Any] | None
) -> tuple[list[TextToolCall], list[str]]:
    if name not in known:
        return [], [_unknown(name, known)]
    params = list(_PARAMETER.finditer(body))
    if params:
        args = {m.group(1).strip(): _decode_parameter(m.group(2), _string_typed(schema, m.group(1).strip())) for m in params}
        return [TextToolCall(name, args, raw)], []
    stripped = body.strip()
    if not stripped:
        return [TextToolCall(name, {}, raw)], []
    try:
        args = _coerce_arguments(_loads_lenient(stripped), name)
    except _ParseError as exc:
        return [], [f"could not parse the arguments of '{name}': {exc}"]
    return [TextToolCall(name, args, raw)], []


# --- Hermes / Qwen <tool_call>{json}</tool_call> ---------------------------------


def _parse_json_calls(
    payload: Any, raw: str, known: Collection[str]
) -> tuple[list[TextToolCall], list[str]]:
    items = payload if isinstance(payload, list) else [payload]
    calls: list[TextToolCall] = []
    errors: list[str] = []
    for item in items:
        parts = _call_parts(item)
        if parts is None:
            if isinstance(item, dict) and isinstance(item.get("name"), str):
                # A name without arguments is a call with no arguments.
                parts = (item["name"], {})
            else:
                errors.append(
                    f"tool call must be an object with \"name\" and \"arguments\", got {_one_line(json.dumps(item), 80)}"
                )
                continue
        name, raw_args = parts
        if name not in known:
            errors.append(_unknown(name, known))
            continue
        try:
            calls.append(TextToolCall(name, _coerce_arguments(raw_args, name), raw))
        except _ParseError as exc:
            errors.append(f"could not parse the arguments of '{name}': {exc}")
    return calls, errors


def _parse_hermes_block(
    body: str, raw: str, known: Collection[str], schemas: Mapping[str, Mapping[str, Any]]
) -> tuple[list[TextToolCall], list[str]]:
    functions = list(_FUNCTION_BLOCK.finditer(body))
    if functions:
        # Qwen3-coder wraps its <function=...> form in <tool_call> tags.
        calls: list[TextToolCall] = []
        errors: list[str] = []
        for m in functions:
            c, e = _parse_function_body(m.group(1), m.group(2), raw, known, schemas.get(m.group(1)))
            calls += c
            errors += e
        return calls, errors
    stripped = body.strip()
    if not stripped:
        return [], ["empty <tool_call> block"]
    try:
        payload = _loads_lenient(stripped)
    except _ParseError as exc:
        return [], [f"could not parse the <tool_call> block: {exc}"]
    return _parse_json_calls(payload, raw, known)


# --- fenced blocks and bare JSON -------------------------------------------------


def _try_json_call(body: str, repair: bool) -> Any | None:
    """Decoded JSON if the body is a call-shaped object or a list of them, else None."""
    stripped = body.strip()
    if not stripped.startswith(("{", "[")):
        return None
    try:
        payload = _loads_lenient(stripped) if repair else _DECODER.decode(stripped)
    except (ValueError, _ParseError):
        return None
    items = payload if isinstance(payload, list) else [payload]
    if not items or any(_call_parts(i) is None for i in items):
        return None
    return payload


# --- public API ---------------------------------------------------------------


def _overlaps(start: int, end: int, spans: list[_Found]) -> bool:
    return any(start < f.end and f.start < end for f in spans)


def parse_text_tool_calls(
    text: str,
    known_tools: Collection[str],
    tool_schemas: Mapping[str, Mapping[str, Any]] | None = None,
) -> TextParseResult:
    """Find tool calls printed in `text`.

    `tool_schemas` (tool name -> JSON schema of its arguments) is optional; when
    given, <parameter=...> values of string-typed properties are kept verbatim
    instead of being JSON-decoded (so a path "42" stays a string).
    """
    schemas = tool_schemas or {}
    found: list[_Found] = []

    for m in _GEMMA_BLOCK.finditer(text):
        calls, errors = _parse_gemma_block(m.group(1), m.group(0), known_tools)
        found.append(_Found(m.start(), m.end(), calls, errors))

    for m in _HERMES_BLOCK.finditer(text):
        if _overlaps(m.start(), m.end(), found):
            continue
        calls, errors = _parse_hermes_block(m.group(1), m.group(0), known_tools, schemas)
        found.append(_Found(m.start(), m.end(), calls, errors))

    for m in _FUNCTION_BLOCK.finditer(text):
        if _overlaps(m.start(), m.end(), found):
            continue
        calls, errors = _parse_function_body(
            m.group(1), m.group(2), m.group(0), known_tools, schemas.get(m.group(1))
        )
        found.append(_Found(m.start(), m.end(), calls, errors))

    for m in _FENCE.finditer(text):
        start, end = m.start(), m.end()
        inner = [f for f in found if start < f.end and f.start < end]
        if inner:
            # A tagged call wrapped in a fence: drop the fence with it when the
            # fence holds nothing else, so no empty ``` block is left behind.
            leftover = m.group("body")
            offset = m.start("body")
            for f in sorted(inner, key=lambda f: f.start, reverse=True):
                a, b = max(f.start - offset, 0), min(f.end - offset, len(leftover))
                leftover = leftover[:a] + leftover[b:]
            if not leftover.strip() and len(inner) == 1:
                inner[0].start, inner[0].end = min(start, inner[0].start), max(end, inner[0].end)
            continue
        lang = m.group("lang").lower()
        if lang not in _CALL_FENCE_LANGS:
            continue
        explicit = lang in _EXPLICIT_CALL_LANGS
        payload = _try_json_call(m.group("body"), repair=True)
        if payload is None:
            if explicit and m.group("body").strip():
                found.append(_Found(start, end, [], ["could not parse the ```tool_call block as a JSON call"]))
            continue
        items = payload if isinstance(payload, list) else [payload]
        names = [p[0] for p in (_call_parts(i) for i in items) if p]
        if not explicit and any(n not in known_tools for n in names):
            # Ordinary JSON that merely has "name" (package.json, API samples).
            continue
        calls, errors = _parse_json_calls(payload, m.group(0), known_tools)
        found.append(_Found(start, end, calls, errors))

    if not found:
        # A message that is nothing but a call-shaped JSON object. Strict JSON
        # only: repairing arbitrary prose into a call would be too eager.
        payload = _try_json_call(text, repair=False)
        if payload is not None:
            items = payload if isinstance(payload, list) else [payload]
            parts = [_call_parts(i) for i in items]
            if all(p is not None and p[0] in known_tools for p in parts):
                calls, errors = _parse_json_calls(payload, text.strip(), known_tools)
                found.append(_Found(0, len(text), calls, errors))

    found.sort(key=lambda f: f.start)
    result = TextParseResult()
    pieces: list[str] = []
    cursor = 0
    for f in found:
        result.calls += f.calls
        result.errors += f.errors
        pieces.append(text[cursor : f.start])
        cursor = max(cursor, f.end)
    pieces.append(text[cursor:])
    remaining = "".join(pieces)
    # Removing a block leaves the blank lines that surrounded it.
    remaining = re.sub(r"[ \t]+\n", "\n", remaining) if found else remaining
    remaining = re.sub(r"\n{3,}", "\n\n", remaining) if found else remaining
    result.text_without_calls = remaining.strip() if found else text
    return result


def _where(path: Any) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _describe(err: ValidationError) -> str:
    where = _where(err.absolute_path)
    prefix = f"argument '{where}'" if where else "arguments"
    if err.validator == "required":
        missing = [k for k in err.validator_value if isinstance(err.instance, dict) and k not in err.instance]
        names = ", ".join(f"'{k}'" for k in missing) or "?"
        inside = f" in '{where}'" if where else ""
        return f"missing required argument {names}{inside}"
    if err.validator == "additionalProperties" and isinstance(err.instance, dict):
        allowed = set((err.schema.get("properties") or {}).keys())
        extra = [k for k in err.instance if k not in allowed]
        names = ", ".join(f"'{k}'" for k in extra)
        hint = f" (allowed: {', '.join(sorted(allowed))})" if allowed else ""
        return f"unexpected argument {names}{hint}"
    if err.validator == "type":
        expected = err.validator_value
        expected_s = " or ".join(expected) if isinstance(expected, list) else str(expected)
        return f"{prefix} must be of type {expected_s}, got {_json_type(err.instance)}"
    if err.validator == "enum":
        options = ", ".join(json.dumps(v) for v in err.validator_value)
        return f"{prefix} must be one of {options}, got {_one_line(json.dumps(err.instance, default=str), 60)}"
    # Other keywords: jsonschema's message, but it embeds the instance, which
    # can be a whole file's content, so keep it to one short line.
    return f"{prefix}: {_one_line(err.message, 160)}"


def validate_arguments(arguments: dict[str, Any], schema: dict[str, Any]) -> str | None:
    """None when `arguments` satisfies `schema`, else a one-line readable error."""
    if not schema:
        return None
    try:
        cls = jsonschema.validators.validator_for(schema)
        cls.check_schema(schema)
    except SchemaError:
        # A broken tool schema is our bug, not the model's: don't reject its call.
        return None
    validator = cls(schema)
    errors = list(validator.iter_errors(arguments))
    if not errors:
        return None
    best = best_match(errors)
    ordered = [best] + [e for e in errors if e is not best]
    lines: list[str] = []
    for err in ordered:
        line = _describe(err)
        if line not in lines:
            lines.append(line)
    extra = len(lines) - 3
    text = "; ".join(lines[:3]) + (f" (+{extra} more)" if extra > 0 else "")
    return "invalid arguments: " + text


def format_error_feedback(error: str, tool_names: list[str]) -> str:
    """The tool-result text sent back to the model after a malformed call."""
    example_name = tool_names[0] if tool_names else "tool_name"
    available = ", ".join(tool_names) if tool_names else "(none)"
    return (
        f"Error: {error}\n"
        "The tool call was not executed. Call tools with the native tool-calling interface. "
        "If you must write a call as text, write exactly one block per call, with valid JSON:\n"
        f'<tool_call>{{"name": "{example_name}", "arguments": {{...}}}}</tool_call>\n'
        f"Available tools: {available}."
    )
