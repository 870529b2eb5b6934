"""What every form of printed tool call shares: the call type, lenient JSON, and call-shaped
JSON objects ({"name": ..., "arguments": ...}, also in the OpenAI wire shape)."""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

import json_repair

from agent.text_lines import one_line

__all__ = [
    "DECODER",
    "ParseError",
    "TextToolCall",
    "call_parts",
    "coerce_arguments",
    "loads_lenient",
    "parse_json_calls",
    "try_json_call",
    "unknown_tool",
]

# strict=False lets literal newlines through inside strings, which models emit
# for multi-line file contents.
DECODER = json.JSONDecoder(strict=False)


@dataclass
class TextToolCall:
    name: str
    arguments: dict[str, Any]
    # The exact source text of the call, so callers can log or echo it.
    raw: str


class ParseError(ValueError):
    pass


def loads_lenient(text: str) -> Any:
    """Strict JSON first; json_repair only as a fallback so valid input is never rewritten."""
    try:
        return DECODER.decode(text)
    except ValueError:
        pass
    repaired = json_repair.loads(text)
    # json_repair answers "" for input it cannot make anything of.
    if repaired == "" and text.strip() not in ('""', "''"):
        raise ParseError(f"not valid JSON: {one_line(text, 80)!r}")
    return repaired


def coerce_arguments(value: Any, name: str) -> dict[str, Any]:
    if value is None:
        return {}
    if isinstance(value, str):
        # Hermes-style calls sometimes double-encode arguments as a JSON string.
        if not value.strip():
            return {}
        value = loads_lenient(value)
    if not isinstance(value, dict):
        raise ParseError(f"arguments of '{name}' must be a JSON object, got {type(value).__name__}")
    return value


def call_parts(obj: Any) -> tuple[str, Any] | None:
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


def unknown_tool(name: str, known: Collection[str]) -> str:
    available = ", ".join(sorted(known)) or "none"
    return f"unknown tool '{name}' (available tools: {available})"


def parse_json_calls(payload: Any, raw: str, known: Collection[str]) -> tuple[list[TextToolCall], list[str]]:
    """The calls in a decoded call object or list of them, and what was wrong with the rest."""
    items = payload if isinstance(payload, list) else [payload]
    calls: list[TextToolCall] = []
    errors: list[str] = []
    for item in items:
        parts = call_parts(item)
        if parts is None:
            if isinstance(item, dict) and isinstance(item.get("name"), str):
                # A name without arguments is a call with no arguments.
                parts = (item["name"], {})
            else:
                errors.append(
                    f'tool call must be an object with "name" and "arguments", got {one_line(json.dumps(item), 80)}'
                )
                continue
        name, raw_args = parts
        if name not in known:
            errors.append(unknown_tool(name, known))
            continue
        try:
            calls.append(TextToolCall(name, coerce_arguments(raw_args, name), raw))
        except ParseError as exc:
            errors.append(f"could not parse the arguments of '{name}': {exc}")
    return calls, errors


def try_json_call(body: str, repair: bool) -> Any | None:
    """Decoded JSON if the body is a call-shaped object or a list of them, else None."""
    stripped = body.strip()
    if not stripped.startswith(("{", "[")):
        return None
    try:
        payload = loads_lenient(stripped) if repair else DECODER.decode(stripped)
    except (ValueError, ParseError):
        return None
    items = payload if isinstance(payload, list) else [payload]
    if not items or any(call_parts(i) is None for i in items):
        return None
    return payload
