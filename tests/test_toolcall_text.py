"""Tool calls printed as text, in the forms local models actually produce."""

from __future__ import annotations

from agent.toolcalls.text import (
    TextToolCall,
    format_error_feedback,
    parse_text_tool_calls,
)

KNOWN = {"view", "edit", "bash", "mcp__git__status"}


def one_call(text: str, **kw: object) -> TextToolCall:
    result = parse_text_tool_calls(text, KNOWN, **kw)  # type: ignore[arg-type]  # keyword options passed through unchanged
    assert result.errors == []
    assert len(result.calls) == 1
    return result.calls[0]


# --- Gemma 4 ------------------------------------------------------------------


def test_gemma_native_syntax_with_delimited_strings() -> None:
    text = '<|tool_call>call:view{path:<|"|>a.py<|"|>}<tool_call|>'
    call = one_call(text)
    assert call.name == "view"
    assert call.arguments == {"path": "a.py"}
    assert call.raw == text


def test_gemma_mixed_values_and_multiline_string_with_quotes() -> None:
    body = 'def f():\n    return "x, {y}"\n'
    text = (
        '<|tool_call>call:edit{path:<|"|>src/m.py<|"|>,new:<|"|>'
        + body
        + '<|"|>,count:2,dry:false,ratio:0.5,tags:[<|"|>a<|"|>,<|"|>b<|"|>],opts:{deep:true}}<tool_call|>'
    )
    call = one_call(text)
    assert call.arguments == {
        "path": "src/m.py",
        "new": body,
        "count": 2,
        "dry": False,
        "ratio": 0.5,
        "tags": ["a", "b"],
        "opts": {"deep": True},
    }


def test_gemma_plain_json_body_and_missing_close_tag() -> None:
    call = one_call('<|tool_call>call:bash{"command": "ls -la", "timeout": 5}')
    assert call.arguments == {"command": "ls -la", "timeout": 5}


def test_gemma_broken_body_is_repaired() -> None:
    call = one_call('<|tool_call>call:view{path:<|"|>a.py<|"|>,<tool_call|>')
    assert call.arguments == {"path": "a.py"}


def test_gemma_no_arguments() -> None:
    assert one_call("<|tool_call>call:mcp__git__status{}<tool_call|>").arguments == {}


# --- Hermes / Qwen ----------------------------------------------------------------


def test_hermes_json_and_text_stripped() -> None:
    text = 'Let me look.\n\n<tool_call>\n{"name": "view", "arguments": {"path": "a.py"}}\n</tool_call>\n\nThen edit.'
    result = parse_text_tool_calls(text, KNOWN)
    assert [(c.name, c.arguments) for c in result.calls] == [("view", {"path": "a.py"})]
    assert result.text_without_calls == "Let me look.\n\nThen edit."
    assert result.errors == []


def test_hermes_arguments_as_json_string() -> None:
    call = one_call('<tool_call>{"name": "bash", "arguments": "{\\"command\\": \\"pwd\\"}"}</tool_call>')
    assert call.arguments == {"command": "pwd"}


def test_hermes_repaired_json() -> None:
    # trailing comma, single quotes, unterminated braces and no closing tag
    call = one_call("<tool_call>{'name': 'view', 'arguments': {'path': 'a.py', 'limit': 3,},")
    assert call.arguments == {"path": "a.py", "limit": 3}


def test_hermes_parameters_key_and_openai_shape() -> None:
    assert one_call('<tool_call>{"name": "view", "parameters": {"path": "x"}}</tool_call>').arguments == {"path": "x"}
    shaped = '<tool_call>{"type": "function", "function": {"name": "view", "arguments": {"path": "y"}}}</tool_call>'
    assert one_call(shaped).arguments == {"path": "y"}


def test_hermes_unparseable_block_is_an_error_and_removed() -> None:
    result = parse_text_tool_calls("ok <tool_call>view the file</tool_call>", KNOWN)
    assert result.calls == []
    assert len(result.errors) == 1 and "<tool_call>" in result.errors[0]
    assert result.text_without_calls == "ok"


# --- Qwen3-coder <function=...> -----------------------------------------------------


def test_function_parameters_raw_multiline_and_json_values() -> None:
    content = "line 1\n  line 2 with <b>tags</b>\n"
    text = (
        "<tool_call>\n<function=edit>\n<parameter=path>\nsrc/a.py\n</parameter>\n"
        f"<parameter=content>\n{content}\n</parameter>\n"
        "<parameter=count>\n3\n</parameter>\n<parameter=force>\ntrue\n</parameter>\n"
        '<parameter=opts>\n{"a": [1, 2]}\n</parameter>\n<parameter=note>\nnot {json\n</parameter>\n'
        "</function>\n</tool_call>"
    )
    call = one_call(text)
    assert call.name == "edit"
    assert call.arguments == {
        "path": "src/a.py",
        "content": content,
        "count": 3,
        "force": True,
        "opts": {"a": [1, 2]},
        "note": "not {json",
    }


def test_function_without_tool_call_wrapper_and_json_body() -> None:
    assert one_call("<function=view><parameter=path>b.py</parameter></function>").arguments == {"path": "b.py"}
    assert one_call('<function=bash>{"command": "ls"}</function>').arguments == {"command": "ls"}


def test_function_string_schema_keeps_numeric_text() -> None:
    schemas = {"view": {"type": "object", "properties": {"path": {"type": "string"}}}}
    call = one_call("<function=view><parameter=path>42</parameter></function>", tool_schemas=schemas)
    assert call.arguments == {"path": "42"}


def test_function_missing_close_tags() -> None:
    call = one_call("<function=view>\n<parameter=path>\na.py\n<parameter=limit>\n10\n")
    assert call.arguments == {"path": "a.py", "limit": 10}


# --- fenced blocks ------------------------------------------------------------------


def test_fenced_json_call_forms() -> None:
    for lang in ("json", "tool_call", ""):
        text = f'I will run it:\n```{lang}\n{{"name": "bash", "arguments": {{"command": "ls"}}}}\n```\nDone.'
        result = parse_text_tool_calls(text, KNOWN)
        assert [(c.name, c.arguments) for c in result.calls] == [("bash", {"command": "ls"})], lang
        assert result.text_without_calls == "I will run it:\n\nDone."


def test_fenced_repaired_json() -> None:
    call = one_call("```json\n{'name': 'view', 'parameters': {'path': 'a.py',},}\n```")
    assert call.arguments == {"path": "a.py"}


def test_plain_json_is_not_a_call() -> None:
    texts = [
        'Your package.json:\n```json\n{"name": "my-app", "version": "1.0.0"}\n```',
        '```json\n{"name": "deploy", "arguments": {"x": 1}}\n```',  # unknown name, json fence
        '```python\n{"name": "view", "arguments": {"path": "a"}}\n```',  # not a JSON fence
        '{"name": "my-app", "version": "1.0.0"}',
    ]
    for text in texts:
        result = parse_text_tool_calls(text, KNOWN)
        assert result.calls == [] and result.errors == [], text
        assert result.text_without_calls == text


def test_bare_whole_message_json_call() -> None:
    call = one_call('  {"name": "view", "arguments": {"path": "a.py"}}\n')
    assert call.arguments == {"path": "a.py"}


def test_tagged_call_inside_fence_removes_fence() -> None:
    text = 'Here:\n```\n<tool_call>{"name": "view", "arguments": {"path": "a"}}</tool_call>\n```\nok'
    result = parse_text_tool_calls(text, KNOWN)
    assert len(result.calls) == 1
    assert result.text_without_calls == "Here:\n\nok"


# --- unknown names, several calls, plain text --------------------------------------


def test_unknown_tool_names_are_errors_not_calls() -> None:
    for text in (
        '<tool_call>{"name": "rm_rf", "arguments": {}}</tool_call>',
        '<|tool_call>call:rm_rf{path:<|"|>/<|"|>}<tool_call|>',
        "<function=rm_rf><parameter=path>/</parameter></function>",
        '```tool_call\n{"name": "rm_rf", "arguments": {}}\n```',
    ):
        result = parse_text_tool_calls(text, KNOWN)
        assert result.calls == [], text
        assert len(result.errors) == 1 and "rm_rf" in result.errors[0] and "view" in result.errors[0]
        assert result.text_without_calls == ""


def test_multiple_calls_in_order_across_forms() -> None:
    text = (
        "First.\n"
        '<tool_call>{"name": "view", "arguments": {"path": "1"}}</tool_call>\n'
        '<tool_call>{"name": "nope", "arguments": {}}</tool_call>\n'
        "Middle.\n"
        '<|tool_call>call:view{path:<|"|>2<|"|>}<tool_call|>'
        "<function=view><parameter=path>3</parameter></function>\n"
        '<tool_call>[{"name": "bash", "arguments": {"command": "a"}}, {"name": "bash", "arguments": {"command": "b"}}]</tool_call>'
        "\nLast."
    )
    result = parse_text_tool_calls(text, KNOWN)
    assert [c.arguments for c in result.calls] == [
        {"path": "1"},
        {"path": "2"},
        {"path": 3},
        {"command": "a"},
        {"command": "b"},
    ]
    assert len(result.errors) == 1 and "nope" in result.errors[0]
    assert result.text_without_calls == "First.\n\nMiddle.\n\nLast."


def test_text_without_calls_is_untouched_when_nothing_found() -> None:
    text = "Just prose.\n\n\n\nWith blank lines  \n"
    result = parse_text_tool_calls(text, KNOWN)
    assert result.calls == [] and result.errors == []
    assert result.text_without_calls == text


# --- validation and feedback -------------------------------------------------------


def test_format_error_feedback_restates_format() -> None:
    text = format_error_feedback("unknown tool 'rm_rf'", ["view", "bash"])
    assert "unknown tool 'rm_rf'" in text
    assert '<tool_call>{"name": "view", "arguments": {...}}</tool_call>' in text
    assert "native tool" in text and "view, bash" in text
