"""validate_arguments: the one validator of tool calls, for built-in and MCP schemas alike."""

from __future__ import annotations

from tools import validate_args, validate_arguments
from tools.registry import builtin_tools

SCHEMA = {
    "type": "object",
    "properties": {
        "path": {"type": "string"},
        "limit": {"type": "integer", "minimum": 1},
        "mode": {"enum": ["r", "w"]},
        "note": {"type": "string", "maxLength": 5},
    },
    "required": ["path"],
    "additionalProperties": False,
}


def test_messages_name_the_tool_and_the_argument() -> None:
    assert validate_arguments("t", SCHEMA, {"path": "a", "limit": 2}) is None
    assert validate_arguments("t", SCHEMA, {"limit": 2}) == "invalid arguments for t: missing required argument 'path'"
    assert validate_arguments("t", SCHEMA, {"path": 5}) == (
        "invalid arguments for t: argument 'path' must be of type string, got 5 (integer)"
    )
    extra = validate_arguments("t", SCHEMA, {"path": "a", "bogus": 1})
    assert extra == "invalid arguments for t: unexpected argument 'bogus' (allowed: limit, mode, note, path)"
    enum = validate_arguments("t", SCHEMA, {"path": "a", "mode": "x"})
    assert enum == 'invalid arguments for t: argument \'mode\' must be one of "r", "w", got "x"'
    low = validate_arguments("t", SCHEMA, {"path": "a", "limit": 0})
    assert low is not None and "argument 'limit'" in low and "minimum" in low
    assert validate_arguments("t", SCHEMA, ["a"]) == 'arguments for t must be a JSON object, got ["a"]'


def test_the_tool_wrapper_says_the_same() -> None:
    for tool in builtin_tools():
        for args in ({}, {"path": 3}, {"bogus": True}, "x"):
            assert validate_args(tool, args) == validate_arguments(tool.name, tool.parameters, args)


def test_long_values_stay_on_one_short_line() -> None:
    for args in ({"path": "a", "mode": "x" * 10_000}, {"path": "a", "note": "line\n" * 10_000}):
        message = validate_arguments("t", SCHEMA, args)
        assert message is not None and len(message) < 400 and "\n" not in message


def test_empty_and_broken_schemas_accept_the_call() -> None:
    assert validate_arguments("t", {}, {"anything": 1}) is None
    assert validate_arguments("t", {"type": "no-such-type"}, {"a": 1}) is None


def test_a_schema_keeps_its_own_draft() -> None:
    # Draft 7 reads a list under "items" as one schema per position; 2020-12 would reject the key.
    draft7 = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {"pair": {"type": "array", "items": [{"type": "string"}, {"type": "integer"}]}},
    }
    assert validate_arguments("t", draft7, {"pair": ["a", 1]}) is None
    assert validate_arguments("t", draft7, {"pair": [1, 1]}) is not None


def test_messages_cover_missing_wrong_type_extra_enum_and_minimum() -> None:
    assert validate_arguments("view", SCHEMA, {"path": "a", "limit": 2}) is None
    assert validate_arguments("view", {}, {}) is None
    missing = validate_arguments("view", SCHEMA, {"limit": 2})
    assert missing is not None and "missing required argument 'path'" in missing
    wrong = validate_arguments("view", SCHEMA, {"path": 5})
    assert wrong is not None and "'path'" in wrong and "string" in wrong and "integer" in wrong
    extra = validate_arguments("view", SCHEMA, {"path": "a", "bogus": 1})
    assert extra is not None and "unexpected argument 'bogus'" in extra
    enum = validate_arguments("view", SCHEMA, {"path": "a", "mode": "x"})
    assert enum is not None and '"r", "w"' in enum
    low = validate_arguments("view", SCHEMA, {"path": "a", "limit": 0})
    assert low is not None and "'limit'" in low and "minimum" in low
    for msg in (missing, wrong, extra, enum, low):
        assert "\n" not in msg


def test_long_values_stay_short_and_broken_schema_is_ignored() -> None:
    msg = validate_arguments("view", SCHEMA, {"path": "a", "mode": "x" * 10_000})
    assert msg is not None and len(msg) < 400
    assert validate_arguments("view", {"type": "no-such-type"}, {"a": 1}) is None
