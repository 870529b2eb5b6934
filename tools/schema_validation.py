"""Check tool arguments against a tool's JSON schema and explain failures in one line.

The one validator of tool calls: `Tool.run` uses it, and so does the agent loop for every tool,
built-in or MCP, before a call is shown to anyone. It knows schemas, not tools, so it imports
nothing from the rest of the tools package.
"""

from __future__ import annotations

import json
from typing import Any, Protocol

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError, ValidationError
from jsonschema.protocols import Validator
from jsonschema.validators import validator_for

MAX_REPORTED_PROBLEMS = 3
# jsonschema's own messages embed the offending value, which can be a whole file's content.
MAX_PROBLEM_CHARS = 160
MAX_CHECKED_SCHEMAS = 256

# Schema (as canonical JSON) -> its validator class, or None for a schema that is itself invalid.
_checked_schemas: dict[str, type[Validator] | None] = {}


class DeclaredTool(Protocol):
    """What validation needs of a tool: its name (for messages) and its argument schema."""

    name: str
    parameters: dict[str, Any]


def validate_arguments(name: str, schema: dict[str, Any], args: Any) -> str | None:
    """None when `args` fit `schema`, else one readable line naming the tool `name`.

    An empty schema accepts any object. A schema that is itself broken (an MCP server's, say)
    is our problem, not the model's: the call is not rejected for it.
    """
    if not isinstance(args, dict):
        return f"arguments for {name} must be a JSON object, got {_short_json(args)}"
    if not schema:
        return None
    validator_class = _validator_class(schema)
    if validator_class is None:
        return None
    errors = sorted(validator_class(schema).iter_errors(args), key=lambda e: [str(p) for p in e.absolute_path])
    if not errors:
        return None
    problems: list[str] = []
    for error in errors:
        for problem in _describe(error, schema, args):
            if problem not in problems:
                problems.append(problem)
    shown = "; ".join(problems[:MAX_REPORTED_PROBLEMS])
    return f"invalid arguments for {name}: {shown}"


def validate_args(tool: DeclaredTool, args: Any) -> str | None:
    """`validate_arguments` for a tool object: its name and its `parameters` schema."""
    return validate_arguments(tool.name, tool.parameters, args)


def _validator_class(schema: dict[str, Any]) -> type[Validator] | None:
    # Checking a schema against its meta-schema costs a hundred validations; do it once per schema.
    key = json.dumps(schema, sort_keys=True, default=repr)
    if key not in _checked_schemas:
        if len(_checked_schemas) >= MAX_CHECKED_SCHEMAS:
            _checked_schemas.clear()
        cls = validator_for(schema, default=Draft202012Validator)
        try:
            cls.check_schema(schema)
        except SchemaError:
            _checked_schemas[key] = None
        else:
            _checked_schemas[key] = cls
    return _checked_schemas[key]


def _describe(error: ValidationError, schema: dict[str, Any], args: dict[str, Any]) -> list[str]:
    name = ".".join(str(part) for part in error.absolute_path)
    if error.validator == "required" and not error.absolute_path:
        missing = [key for key in error.validator_value if key not in args]
        return [f"missing required argument '{key}'" for key in missing]
    if error.validator == "additionalProperties" and not error.absolute_path:
        known = set(schema.get("properties", {}))
        allowed = ", ".join(sorted(known)) or "none"
        return [f"unexpected argument '{key}' (allowed: {allowed})" for key in args if key not in known]
    if error.validator == "type":
        return [
            f"argument '{name}' must be of type {error.validator_value}, "
            f"got {_short_json(error.instance)} ({_json_type(error.instance)})"
        ]
    if error.validator == "enum":
        choices = ", ".join(json.dumps(v) for v in error.validator_value)
        return [f"argument '{name}' must be one of {choices}, got {_short_json(error.instance)}"]
    label = f"argument '{name}'" if name else "arguments"
    return [f"{label}: {_one_line(error.message, MAX_PROBLEM_CHARS)}"]


def _short_json(value: Any, limit: int = 60) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _json_type(value: Any) -> str:
    """The JSON Schema name of a decoded JSON value's type."""
    if value is None:
        return "null"
    # bool before int: True is an int to Python, a boolean to JSON.
    kinds = ((bool, "boolean"), (int, "integer"), (float, "number"), (str, "string"), (list, "array"), (dict, "object"))
    return next((name for kind, name in kinds if isinstance(value, kind)), type(value).__name__)


def _one_line(text: str, limit: int) -> str:
    flat = text.replace("\r", " ").replace("\n", " ")
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
