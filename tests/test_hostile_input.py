"""Hostile model input becomes an error result for the model, never an exception out of the loop,
and the session file stays valid JSONL."""

from __future__ import annotations

import json
import math
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent.sessions import SessionStore
from agent.toolcalls import parse_text_tool_calls
from tests.support.scripted_model import ScriptedModelServer, ScriptedToolCall, ScriptedTurn
from tools.base import ToolContext, ToolResult
from tools.registry import builtin_tools


def _session_lines(la_env) -> list[dict]:
    [path] = list((la_env.home / "data" / "sessions").glob("*.jsonl"))
    return [json.loads(line) for line in path.read_text(encoding="utf-8").split("\n") if line]


def test_nul_surrogate_and_nan_become_error_results_and_the_session_stays_valid(la_env):
    turns = [
        ScriptedTurn(tool_calls=[ScriptedToolCall("bash", {"command": "echo a\0b"})]),
        ScriptedTurn(tool_calls=[ScriptedToolCall("view", '{"path": "a\\ud800.txt"}')]),
        ScriptedTurn(tool_calls=[ScriptedToolCall("bash", '{"command": "true", "timeout": NaN}')]),
        ScriptedTurn(text="done"),
    ]
    task = la_env.workspace / "TASK.md"
    task.write_text("go")
    with ScriptedModelServer(turns) as model:
        result = la_env.run(
            "run", str(task), "--base-url", model.base_url, "--mode", "full-auto", "--output-format", "json"
        )
        results = [m["content"] for m in model.requests[-1]["messages"] if m["role"] == "tool"]
    assert "Traceback" not in result.stderr, result.stderr
    assert result.code == 0, result.stderr
    assert "NUL" in results[0] and results[0].startswith("Error")
    assert "surrogate" in results[1]
    assert "nan" in results[2].lower() and results[2].startswith("Error")
    events = _session_lines(la_env)  # every line parses
    assert any(e.get("type") == "tool_call_finished" for e in events)


_scalars = st.one_of(
    st.text(),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
    st.sampled_from(["\0", "\ud800", "../../etc/passwd", "/etc/shadow", "a" * 5000, "(a+)+$", "*" * 50]),
)
_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=8,
)


def _arguments(tool) -> st.SearchStrategy[dict]:
    names = list(tool.parameters.get("properties", {})) + ["extra"]
    return st.dictionaries(st.sampled_from(names), _values, max_size=len(names))


TOOLS = [tool for tool in builtin_tools() if tool.name != "bash"]  # bash runs commands: covered above


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
async def test_every_file_tool_answers_any_arguments_with_a_result(tmp_path: Path, data):
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    (workspace / "a.txt").write_text("hello\n")
    ctx = ToolContext(workspace=workspace, scratch_dir=tmp_path / "scratch")
    for tool in TOOLS:
        args = data.draw(_arguments(tool), label=tool.name)
        result = await tool.run(args, ctx)
        assert isinstance(result, ToolResult)
    assert workspace.resolve() == ctx.workspace


@settings(max_examples=200, deadline=None)
@given(
    text=st.text()
    | st.sampled_from(
        [
            '<tool_call>{"name": "bash", "arguments": NaN}</tool_call>',
            '<|tool_call>call:bash{command:<|"|>\ud800<|"|>}<tool_call|>',
            '```json\n{"name": "view", "arguments": {"path": "\\u0000"}}\n```',
        ]
    )
)
def test_the_text_tool_call_parser_never_raises(text: str):
    parsed = parse_text_tool_calls(text, {"bash", "view"})
    assert isinstance(parsed.text_without_calls, str)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(payload=_values)
def test_any_event_payload_is_written_as_one_valid_json_line(tmp_path: Path, payload):
    store = SessionStore(tmp_path / "sessions")
    writer = store.create(tmp_path)
    writer.append({"type": "probe", "payload": payload})
    writer.close()
    [path] = list((tmp_path / "sessions").glob(f"{writer.session_id}*.jsonl"))
    lines = [line for line in path.read_bytes().decode("utf-8").split("\n") if line]  # JSONL: \n only
    record = json.loads(lines[-1])
    if isinstance(payload, float) and math.isnan(payload):
        assert record["payload"] == "nan"
