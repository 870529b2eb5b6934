"""Recognise tool calls that a local model printed as plain text.

llama-server only extracts native tool calls when the chat template and its
parser agree with what the model emits. Small local models regularly print the
call into the content instead (Gemma 4's own syntax, Hermes/Qwen tags, Qwen3
coder's XML-ish form, or a fenced JSON block). This module turns those texts
back into calls so the agent loop can run them, and produces the error text
that teaches the model the expected format when it gets it wrong.

Gemma's syntax is read in agent.toolcalls.gemma, the JSON shapes all forms share in
agent.toolcalls.json_calls; the arguments of a call are checked against the tool's schema by the
loop (tools.schema_validation), not here.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from agent.toolcalls.gemma import GEMMA_BLOCK, parse_gemma_block
from agent.toolcalls.json_calls import (
    DECODER,
    ParseError,
    TextToolCall,
    call_parts,
    coerce_arguments,
    loads_lenient,
    parse_json_calls,
    try_json_call,
    unknown_tool,
)

__all__ = [
    "TextParseResult",
    "TextToolCall",
    "format_error_feedback",
    "parse_text_tool_calls",
]


@dataclass
class TextParseResult:
    calls: list[TextToolCall] = field(default_factory=list)
    text_without_calls: str = ""
    errors: list[str] = field(default_factory=list)


# --- patterns -----------------------------------------------------------------
# Every block form also ends at the next opening tag or the end of the text:
# generation often stops right before the closing tag (it can be a stop token),
# and a missing close must not swallow the following call.
_HERMES_BLOCK = re.compile(r"<tool_call>(.*?)(?:</tool_call>|(?=<tool_call>)|\Z)", re.S)
_FUNCTION_BLOCK = re.compile(r"<function=([^>\s]+)\s*>(.*?)(?:</function>|(?=<function=)|(?=</tool_call>)|\Z)", re.S)
_PARAMETER = re.compile(r"<parameter=([^>]+?)\s*>(.*?)(?:</parameter>|(?=<parameter=)|\Z)", re.S)
_FENCE = re.compile(r"(?P<fence>`{3,})[ \t]*(?P<lang>[\w+-]*)[^\n]*\n(?P<body>.*?)\n?[ \t]*(?P=fence)", re.S)
# Fence languages that may carry a JSON call; ```python etc. are left alone.
_CALL_FENCE_LANGS = {"", "json", "jsonc", "json5", "tool_call", "tool", "tool_code", "function_call"}
# In these fences the model clearly meant a call, so an unknown name is an error
# rather than "just some JSON".
_EXPLICIT_CALL_LANGS = {"tool_call", "tool", "function_call"}

_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?")


@dataclass
class _Found:
    start: int
    end: int
    calls: list[TextToolCall]
    errors: list[str]


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
            return DECODER.decode(probe)
        except ValueError:
            pass
    return value


def _parse_function_body(
    name: str, body: str, raw: str, known: Collection[str], schema: Mapping[str, Any] | None
) -> tuple[list[TextToolCall], list[str]]:
    if name not in known:
        return [], [unknown_tool(name, known)]
    params = list(_PARAMETER.finditer(body))
    if params:
        args = {
            m.group(1).strip(): _decode_parameter(m.group(2), _string_typed(schema, m.group(1).strip())) for m in params
        }
        return [TextToolCall(name, args, raw)], []
    stripped = body.strip()
    if not stripped:
        return [TextToolCall(name, {}, raw)], []
    try:
        args = coerce_arguments(loads_lenient(stripped), name)
    except ParseError as exc:
        return [], [f"could not parse the arguments of '{name}': {exc}"]
    return [TextToolCall(name, args, raw)], []


# --- Hermes / Qwen <tool_call>{json}</tool_call> ---------------------------------


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
        payload = loads_lenient(stripped)
    except ParseError as exc:
        return [], [f"could not parse the <tool_call> block: {exc}"]
    return parse_json_calls(payload, raw, known)


# --- finding the calls in a text ---------------------------------------------------


def _overlaps(start: int, end: int, spans: list[_Found]) -> bool:
    return any(start < f.end and f.start < end for f in spans)


def _find_tagged(text: str, known: Collection[str], schemas: Mapping[str, Mapping[str, Any]]) -> list[_Found]:
    """Calls in tags: Gemma's first, then Hermes/Qwen blocks, then bare <function=...> forms."""
    found = [
        _Found(m.start(), m.end(), *parse_gemma_block(m.group(1), m.group(0), known))
        for m in GEMMA_BLOCK.finditer(text)
    ]
    for m in _HERMES_BLOCK.finditer(text):
        if not _overlaps(m.start(), m.end(), found):
            found.append(_Found(m.start(), m.end(), *_parse_hermes_block(m.group(1), m.group(0), known, schemas)))
    for m in _FUNCTION_BLOCK.finditer(text):
        if not _overlaps(m.start(), m.end(), found):
            calls, errors = _parse_function_body(m.group(1), m.group(2), m.group(0), known, schemas.get(m.group(1)))
            found.append(_Found(m.start(), m.end(), calls, errors))
    return found


def _absorb_fence(fence: re.Match[str], inner: list[_Found]) -> None:
    """A tagged call wrapped in a fence: drop the fence with it when the fence holds nothing
    else, so no empty ``` block is left behind."""
    leftover = fence.group("body")
    offset = fence.start("body")
    for f in sorted(inner, key=lambda f: f.start, reverse=True):
        a, b = max(f.start - offset, 0), min(f.end - offset, len(leftover))
        leftover = leftover[:a] + leftover[b:]
    if not leftover.strip() and len(inner) == 1:
        inner[0].start, inner[0].end = min(fence.start(), inner[0].start), max(fence.end(), inner[0].end)


def _fenced_call(fence: re.Match[str], known: Collection[str]) -> _Found | None:
    """The call in a ```json (or ```tool_call ...) fence, or None for a fence that holds none."""
    lang = fence.group("lang").lower()
    if lang not in _CALL_FENCE_LANGS:
        return None
    explicit = lang in _EXPLICIT_CALL_LANGS
    payload = try_json_call(fence.group("body"), repair=True)
    if payload is None:
        if explicit and fence.group("body").strip():
            return _Found(fence.start(), fence.end(), [], ["could not parse the ```tool_call block as a JSON call"])
        return None
    items = payload if isinstance(payload, list) else [payload]
    names = [p[0] for p in (call_parts(i) for i in items) if p]
    if not explicit and any(n not in known for n in names):
        # Ordinary JSON that merely has "name" (package.json, API samples).
        return None
    return _Found(fence.start(), fence.end(), *parse_json_calls(payload, fence.group(0), known))


def _find_fenced(text: str, known: Collection[str], found: list[_Found]) -> None:
    for m in _FENCE.finditer(text):
        inner = [f for f in found if m.start() < f.end and f.start < m.end()]
        if inner:
            _absorb_fence(m, inner)
        elif (call := _fenced_call(m, known)) is not None:
            found.append(call)


def _find_bare(text: str, known: Collection[str]) -> _Found | None:
    """A message that is nothing but a call-shaped JSON object. Strict JSON only: repairing
    arbitrary prose into a call would be too eager."""
    payload = try_json_call(text, repair=False)
    if payload is None:
        return None
    items = payload if isinstance(payload, list) else [payload]
    parts = [call_parts(i) for i in items]
    if not all(p is not None and p[0] in known for p in parts):
        return None
    return _Found(0, len(text), *parse_json_calls(payload, text.strip(), known))


def _assemble(text: str, found: list[_Found]) -> TextParseResult:
    """The calls and errors in text order, and the text with the call blocks cut out."""
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


# --- public API ---------------------------------------------------------------


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
    found = _find_tagged(text, known_tools, tool_schemas or {})
    _find_fenced(text, known_tools, found)
    if not found and (bare := _find_bare(text, known_tools)) is not None:
        found.append(bare)
    return _assemble(text, found)


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
