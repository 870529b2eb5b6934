"""The tool registry, OpenAI declarations and argument validation."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tools import Tool, builtin_tools, openai_tool_specs, tools_by_name, validate_args
from tools.output_truncation import cut_middle

EXPECTED_NAMES = ["bash", "view", "create", "edit", "insert", "grep", "glob"]


def test_builtin_tools_in_stable_order() -> None:
    assert [tool.name for tool in builtin_tools()] == EXPECTED_NAMES
    assert set(tools_by_name(builtin_tools())) == set(EXPECTED_NAMES)


def test_reads_only_flags() -> None:
    flags = {tool.name: tool.reads_only for tool in builtin_tools()}
    assert flags == {
        "bash": False,
        "view": True,
        "create": False,
        "edit": False,
        "insert": False,
        "grep": True,
        "glob": True,
    }


def test_schemas_are_closed_objects_with_descriptions() -> None:
    for tool in builtin_tools():
        assert isinstance(tool, Tool)
        assert tool.parameters["type"] == "object"
        assert tool.parameters["additionalProperties"] is False
        assert tool.description
        for name, spec in tool.parameters["properties"].items():
            assert spec.get("description"), (tool.name, name)
        assert set(tool.parameters["required"]) <= set(tool.parameters["properties"])


def test_openai_specs_are_byte_identical_across_calls() -> None:
    first = json.dumps(openai_tool_specs())
    second = json.dumps(openai_tool_specs(builtin_tools()))
    assert first == second
    spec = openai_tool_specs()[0]
    assert list(spec) == ["type", "function"]
    assert list(spec["function"]) == ["name", "description", "parameters"]


def test_mutating_a_spec_does_not_change_the_tool() -> None:
    specs = openai_tool_specs()
    specs[0]["function"]["parameters"]["properties"].clear()
    assert json.dumps(openai_tool_specs()) != json.dumps(specs)


def test_validate_args_messages() -> None:
    view = tools_by_name(builtin_tools())["view"]
    assert validate_args(view, {"path": "a"}) is None
    assert validate_args(view, {}) == "invalid arguments for view: missing required argument 'path'"
    assert "must be a JSON object" in (validate_args(view, ["a"]) or "")
    wrong = validate_args(view, {"path": 3, "limit": "ten"})
    assert wrong is not None
    assert "argument 'path' must be of type string, got 3" in wrong
    assert "argument 'limit' must be of type integer" in wrong
    extra = validate_args(view, {"path": "a", "bogus": 1})
    assert extra is not None and "unexpected argument 'bogus'" in extra and "allowed: limit, offset, path" in extra


def test_describe_call_for_path_tools(tmp_path: Path) -> None:
    by_name = tools_by_name(builtin_tools())
    for name in ["view", "create", "edit", "insert"]:
        assert by_name[name].describe_call({"path": "src/a.py"}) == "src/a.py"
        assert by_name[name].describe_call({"path": str(tmp_path / "src/a.py")}, tmp_path) == "src/a.py"
        assert by_name[name].describe_call({}) == ""


def test_tools_package_is_a_standalone_layer() -> None:
    code = (
        "import sys, tools\n"
        "bad = [m for m in sys.modules if m.split('.')[0] in {'agent', 'tui', 'server', 'localagent'}]\n"
        "assert not bad, bad\n"
    )
    root = Path(__file__).resolve().parents[1]
    subprocess.run([sys.executable, "-c", code], cwd=root, check=True)


def test_cut_middle_keeps_short_text() -> None:
    assert cut_middle("a\nb\n", max_chars=100, max_lines=10) is None


def test_cut_middle_by_lines() -> None:
    text = "".join(f"{n}\n" for n in range(100))
    cut = cut_middle(text, max_chars=10_000, max_lines=10)
    assert cut is not None
    assert cut.head == "".join(f"{n}\n" for n in range(5))
    assert cut.tail == "".join(f"{n}\n" for n in range(95, 100))
    assert cut.cut_lines == 90
    assert cut.head + text[len(cut.head) : len(text) - len(cut.tail)] + cut.tail == text


def test_cut_middle_single_huge_line() -> None:
    text = "x" * 1000
    cut = cut_middle(text, max_chars=100, max_lines=10)
    assert cut is not None
    assert len(cut.head) == 50 and len(cut.tail) == 50
    assert cut.cut_chars == 900


# -- the schema the model is told -------------------------------------------------------------------


def test_declared_schemas_inline_references_and_fold_optional_types() -> None:
    from tools.schema_inline import declared_schema

    schema = {
        "$defs": {"Stop": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}},
        "type": "object",
        "properties": {
            "stops": {"type": "array", "items": {"$ref": "#/$defs/Stop"}},
            "first": {"anyOf": [{"$ref": "#/$defs/Stop"}, {"type": "null"}], "description": "optional"},
            "note": {"type": ["string", "null"]},
            "either": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
        },
    }
    plain = declared_schema(schema)
    stop = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    assert plain["properties"]["stops"]["items"] == stop
    assert plain["properties"]["first"] == {**stop, "description": "optional", "nullable": True}
    assert plain["properties"]["note"] == {"type": "string", "nullable": True}
    # A real choice between two types is left as it is.
    assert plain["properties"]["either"] == schema["properties"]["either"]
    # A required property that may be null keeps its null: omitting it would not say the same.
    required = declared_schema({**schema, "required": ["note"]})
    assert required["properties"]["note"] == {"type": ["string", "null"]}
    assert "$defs" not in plain and "$ref" not in str(plain)
    assert "$defs" in schema  # the tool's own schema, which validates arguments, is untouched


def test_a_schema_that_refers_to_itself_ends_as_a_plain_object() -> None:
    from tools.schema_inline import declared_schema

    tree = {
        "$defs": {"Node": {"type": "object", "properties": {"child": {"$ref": "#/$defs/Node"}}}},
        "$ref": "#/$defs/Node",
    }
    plain = declared_schema(tree)
    assert plain == {"type": "object", "properties": {"child": {"type": "object"}}}


def test_deeply_nested_models_keep_their_types() -> None:
    from tools.schema_inline import declared_schema

    # Six models, each holding an optional list of the next: far deeper than any cycle guard.
    defs = {
        f"M{i}": {
            "type": "object",
            "properties": {
                "kids": {"anyOf": [{"type": "array", "items": {"$ref": f"#/$defs/M{i + 1}"}}, {"type": "null"}]}
            },
        }
        for i in range(5)
    }
    defs["M5"] = {"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string"}}}}
    node = declared_schema({"$defs": defs, "$ref": "#/$defs/M0"})
    for _ in range(5):
        node = node["properties"]["kids"]["items"]
    assert node["properties"]["tags"] == {"type": "array", "items": {"type": "string"}}


def test_the_tool_list_declares_the_plain_schema_and_validation_keeps_the_original() -> None:
    from tools.registry import openai_tool_specs
    from tools.schema_validation import validate_arguments

    class Optional_:
        name = "pick"
        description = "pick one"
        parameters = {"type": "object", "properties": {"n": {"anyOf": [{"type": "integer"}, {"type": "null"}]}}}

    spec = openai_tool_specs([Optional_()])[0]["function"]["parameters"]
    assert spec["properties"]["n"] == {"type": "integer", "nullable": True}
    assert validate_arguments("pick", Optional_.parameters, {"n": None}) is None
