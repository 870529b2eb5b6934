"""Check tool arguments against the tool's JSON schema and explain failures in one line."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

if TYPE_CHECKING:
    from tools.base import Tool

MAX_REPORTED_PROBLEMS = 3


def validate_args(tool: Tool, args: Any) -> str | None:
    """Return None when `args` fit the tool's schema, else a readable error message."""
    if not isinstance(args, dict):
        return f"arguments for {tool.name} must be a JSON object, got {_short_json(args)}"
    validator = Draft202012Validator(tool.parameters)
    errors = sorted(validator.iter_errors(args), key=lambda e: [str(p) for p in e.absolute_path])
    if not errors:
        return None
    problems: list[str] = []
    for error in errors:
        for problem in _describe(error, tool, args):
            if problem not in problems:
                problems.append(problem)
    shown = "; ".join(problems[:MAX_REPORTED_PROBLEMS])
    return f"invalid arguments for {tool.name}: {shown}"


def _describe(error: ValidationError, tool: Tool, args: dict[str, Any]) -> list[str]:
    name = ".".join(str(part) for part in error.absolute_path)
    if error.validator == "required" and not error.absolute_path:
        missing = [key for key in error.validator_value if key not in args]
        return [f"missing required argument '{key}'" for key in missing]
    if error.validator == "additionalProperties" and not error.absolute_path:
        known = set(tool.parameters.get("properties", {}))
        allowed = ", ".join(sorted(known)) or "none"
        return [
            f"unexpected argument '{key}' (allowed: {allowed})"
            for key in args
            if key not in known
        ]
    if error.validator == "type":
        return [
            f"argument '{name}' must be of type {error.validator_value}, "
            f"got {_short_json(error.instance)}"
        ]
    if error.validator == "enum":
        choices = ", ".join(json.dumps(v) for v in error.validator_value)
        return [f"argument '{name}' must be one of {choices}, got {_short_json(error.instance)}"]
    label = f"argument '{name}'" if name else "arguments"
    return [f"{label}: {error.message}"]


def _short_json(value: Any, limit: int = 60) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"
