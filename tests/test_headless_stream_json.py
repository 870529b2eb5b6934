"""`localagent run "..." --output-format stream-json|json`, from the real CLI against the scripted
model, read by a parser of Claude Code's schema (tests/test_headless_claude_schema.py)."""

from __future__ import annotations

import json

from tests.support.scripted_model import ScriptedModelServer, ScriptedToolCall, ScriptedTurn
from tests.test_headless_claude_schema import parse_claude_stream


def call(name: str, call_id: str, **arguments) -> ScriptedTurn:
    return ScriptedTurn(tool_calls=[ScriptedToolCall(name, arguments, id=call_id)])


def run_stream(la_env, model: ScriptedModelServer, *extra: str, prompt: str = "fix the failing test"):
    result = la_env.run("run", prompt, "--base-url", model.base_url, "--output-format", "stream-json", *extra, input="")
    return result, parse_claude_stream(result.stdout)


def test_stream_json_pipes_into_a_parser_of_claudes_schema(la_env):
    (la_env.workspace / "notes.txt").write_text("alpha\n")
    turns = [
        ScriptedTurn(
            reasoning="look first",
            text="Reading.",
            tool_calls=[ScriptedToolCall("view", {"path": "notes.txt"}, id="call_view")],
        ),
        call("bash", "call_denied", command="touch made.txt"),  # asks in auto-edit: denied headless
        ScriptedTurn(text="The notes say alpha."),
    ]
    with ScriptedModelServer(turns) as model:
        result, run = run_stream(la_env, model, "--mode", "auto-edit")
        models = {request["model"] for request in model.requests}
    assert result.code == 0, result.stderr
    assert models == {"scripted"}  # the id the server lists at /v1/models
    init = run.init
    assert init is not None and init.model == "scripted" and init.permissionMode == "acceptEdits"
    assert {"bash", "view", "edit"} <= set(init.tools) and init.cwd == str(la_env.workspace)
    assert init.session_id in result.stderr  # the same id the CLI names for --resume
    assert run.order == ["system", "assistant", "user", "assistant", "user", "assistant", "result"]
    assert not run.events  # no per-token lines without --include-partial-messages

    first = run.assistant[0].message
    assert [block.type for block in first.content] == ["thinking", "text", "tool_use"]
    assert first.content[2].name == "view" and first.content[2].input == {"path": "notes.txt"}
    assert first.stop_reason == "tool_use" and first.usage.output_tokens > 0
    viewed, denied = (message.message.content[0] for message in run.user)
    assert viewed.tool_use_id == "call_view" and "alpha" in viewed.content and viewed.is_error is False
    assert denied.tool_use_id == "call_denied" and denied.is_error is True
    assert run.assistant[-1].message.stop_reason == "end_turn"

    final = run.result
    assert final.subtype == "success" and final.is_error is False
    assert final.result == "The notes say alpha." and final.num_turns == 3
    assert final.total_cost_usd == 0 and final.usage.output_tokens > 0
    assert final.usage.cache_read_input_tokens > 0  # later requests reuse the cached prefix
    assert [(d.tool_name, d.tool_use_id, d.tool_input) for d in final.permission_denials] == [
        ("bash", "call_denied", {"command": "touch made.txt"})
    ]
    ours = json.loads(result.stdout.splitlines()[-1])["localagent"]
    assert ours["status"] == "done" and ours["steps"] == 3 and ours["tool_calls"] == 2
    assert 0 < ours["prompt_cache_reuse"] < 1 and ours["tokens_per_second"] > 0


def test_partial_messages_stream_each_token_as_stream_events(la_env):
    answer = "A longer answer, streamed in small pieces."
    with ScriptedModelServer([ScriptedTurn(text=answer, chunk_size=3)]) as model:
        result, run = run_stream(la_env, model, "--include-partial-messages", "--model", "qwen3-coder")
        sent = model.requests[0]["model"]
    assert result.code == 0, result.stderr
    assert sent == "qwen3-coder" and run.init.model == "qwen3-coder"
    kinds = [event.event["type"] for event in run.events]
    assert kinds[0] == "message_start" and kinds[-2:] == ["message_delta", "message_stop"]
    assert kinds.count("content_block_delta") == -(-len(answer) // 3)  # one per streamed chunk
    assert run.text_deltas() == answer
    assert run.events[0].event["message"]["id"] == run.assistant[0].message.id
    assert run.order.index("assistant") > run.order.index("stream_event")


def test_limits_and_startup_failures_end_in_an_error_result(la_env):
    (la_env.workspace / "x.txt").write_text("x\n")
    turns = [call("view", "c1", path="x.txt"), call("view", "c2", path="x.txt"), ScriptedTurn(text="late")]
    with ScriptedModelServer(turns) as model:
        result, run = run_stream(la_env, model, "--max-turns", "2")
    assert result.code == 3
    assert run.result.subtype == "error_max_turns" and run.result.is_error and run.result.num_turns == 2
    assert "--max-turns" in run.result.result

    failed = la_env.run(
        "run", "do it", "--base-url", "http://127.0.0.1:9/v1", "--output-format", "stream-json", input=""
    )
    assert failed.code == 2 and "nothing answers" in failed.stderr
    assert len(failed.stderr.strip().splitlines()) == 1 and "Traceback" not in failed.stderr
    run = parse_claude_stream(failed.stdout)
    assert run.order == ["result"] and run.result.is_error and run.result.subtype == "error_during_execution"
    assert run.result.result == failed.stderr.strip().removeprefix("error: ")

    la_env.write_config("[agent]\nmax_steps = 0\n")
    bad_config = la_env.run("run", "do it", "--output-format", "json", input="")
    assert bad_config.code == 2 and len(bad_config.stderr.strip().splitlines()) == 1
    data = json.loads(bad_config.stdout)
    assert data["type"] == "result" and data["is_error"] is True and "max_steps" in data["result"]


def test_json_is_the_result_object_with_the_earlier_fields_kept(la_env):
    with ScriptedModelServer([ScriptedTurn(text="ok")]) as model:
        result = la_env.run("run", "say ok", "--base-url", model.base_url, "--output-format", "json", input="")
    assert result.code == 0, result.stderr
    data = json.loads(result.stdout)
    assert len(result.stdout.strip().splitlines()) == 1
    assert (data["type"], data["subtype"], data["is_error"], data["result"]) == ("result", "success", False, "ok")
    assert data["localagent"]["status"] == "done"
    assert data["status"] == "done" and data["final_text"] == "ok"  # localagent's earlier fields
    parse_claude_stream(result.stdout)


def test_partial_messages_stream_a_tool_call_as_claude_code_does(la_env):
    """A step that only calls a tool still streams: the tool_use block starts with its id and
    name, its arguments arrive as input_json_delta pieces, and the block stops."""
    (la_env.workspace / "x.txt").write_text("x\n")
    with ScriptedModelServer([call("view", "call_v", path="x.txt"), ScriptedTurn(text="done")]) as model:
        result, run = run_stream(la_env, model, "--include-partial-messages")
    assert result.code == 0, result.stderr
    first = [item.event for item in run.events][
        : next(i for i, e in enumerate(run.events) if e.event["type"] == "message_stop") + 1
    ]
    starts = [e for e in first if e["type"] == "content_block_start"]
    assert [s["content_block"]["type"] for s in starts] == ["tool_use"]
    assert starts[0]["content_block"]["id"] == "call_v" and starts[0]["content_block"]["name"] == "view"
    pieces = [e["delta"]["partial_json"] for e in first if e["type"] == "content_block_delta"]
    assert all(e["delta"]["type"] == "input_json_delta" for e in first if e["type"] == "content_block_delta")
    assert json.loads("".join(pieces)) == {"path": "x.txt"}
    assert [e["type"] for e in first][-3:] == ["content_block_stop", "message_delta", "message_stop"]
    assert first[-2]["delta"]["stop_reason"] == "tool_use"
