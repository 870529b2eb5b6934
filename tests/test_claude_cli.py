"""Claude Code's command line on the root command, spoken by hand: the flags a program passes,
and the stream-json protocol on stdin (control requests answered, never left in silence)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from agent.prompt import without_context
from tests.support.scripted_model import ScriptedModelServer, ScriptedToolCall, ScriptedTurn

pytestmark = pytest.mark.slow


def lines(*messages: dict) -> str:
    return "".join(json.dumps(message) + "\n" for message in messages)


def control(request_id: str, subtype: str, **fields) -> dict:
    return {"type": "control_request", "request_id": request_id, "request": {"subtype": subtype, **fields}}


def stream_run(la_env, model: ScriptedModelServer, stdin: str, *flags: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "localagent.cli", "--output-format", "stream-json", "--input-format", "stream-json"]
    argv += ["--base-url", model.base_url, *flags]
    return subprocess.run(
        argv, input=stdin, capture_output=True, text=True, env=la_env.env, cwd=la_env.workspace, timeout=120
    )


def test_print_mode_answers_on_stdout_and_names_ignored_flags_once(la_env) -> None:
    with ScriptedModelServer([ScriptedTurn(text="Hi there.")]) as model:
        result = la_env.run(
            "-p", "say hi", "--base-url", model.base_url, "--verbose", "--max-budget-usd", "2", "--betas", "x", input=""
        )
    assert result.code == 0, result.stderr
    assert result.stdout.strip() == "Hi there."
    notes = [line for line in result.stderr.splitlines() if "ignored here" in line]
    assert len(notes) == 1 and "--max-budget-usd" in notes[0] and "--betas" in notes[0]


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["-p", "x", "--permission-mode", "sometimes"], "--permission-mode"),
        (["-p", "x", "--max-turns", "0"], "--max-turns"),
        (["--output-format", "text", "--input-format", "stream-json"], "needs --output-format stream-json"),
        (["-p", "x", "--tools", "Read,Teleport"], "Teleport"),
        (["-p", "x", "--mcp-config", "{not json"], "--mcp-config is not valid JSON"),
        (["-p", "x", "--no-such-flag"], "--no-such-flag"),
    ],
)
def test_a_malformed_flag_is_one_line_and_exit_2(la_env, args: list[str], words: str) -> None:
    result = la_env.run(*args, input="")
    assert result.code == 2
    assert len(result.stderr.strip().splitlines()) == 1 and words in result.stderr, result.stderr
    assert "Traceback" not in result.stderr


def test_stream_json_answers_every_control_request_and_serves_turns_until_stdin_closes(la_env) -> None:
    stdin = lines(
        control("r1", "initialize", hooks=None),
        control("r2", "no_such_request"),
        control("r3", "set_permission_mode", mode="plan"),
        control("r4", "set_model", model="other-model"),
        {"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": "first"}]}},
        control("r5", "get_context_usage"),
        control("r6", "mcp_status"),
        {"type": "user", "message": {"role": "user", "content": "second"}},
    )
    with ScriptedModelServer([ScriptedTurn(text="One."), ScriptedTurn(text="Two.")]) as model:
        done = stream_run(la_env, model, stdin, "--verbose")
        sent = [(r["model"], without_context(r["messages"][-1]["content"])) for r in model.requests]
    assert done.returncode == 0, done.stderr
    out = [json.loads(line) for line in done.stdout.splitlines()]
    responses = {m["response"]["request_id"]: m["response"] for m in out if m["type"] == "control_response"}
    assert set(responses) == {"r1", "r2", "r3", "r4", "r5", "r6"}
    assert responses["r2"]["subtype"] == "error" and "no_such_request" in responses["r2"]["error"]
    assert all(responses[r]["subtype"] == "success" for r in ("r1", "r3", "r4", "r5", "r6"))
    assert responses["r1"]["response"]["models"][0]["value"]
    assert responses["r6"]["response"] == {"mcpServers": []}
    results = [m for m in out if m["type"] == "result"]
    assert [r["result"] for r in results] == ["One.", "Two."] and not any(r["is_error"] for r in results)
    inits = [m for m in out if m["type"] == "system" and m["subtype"] == "init"]
    assert inits[0]["permissionMode"] == "plan" and inits[0]["claude_code_version"].count(".") == 2
    assert sent == [("other-model", "first"), ("other-model", "second")]


def test_a_question_asked_after_stdin_closed_is_refused_and_the_process_ends(la_env) -> None:
    (la_env.workspace / "a.txt").write_text("old\n")
    turns = [
        ScriptedTurn(tool_calls=[ScriptedToolCall("view", {"path": "a.txt"}, id="v")]),
        ScriptedTurn(
            tool_calls=[ScriptedToolCall("edit", {"path": "a.txt", "old_string": "old", "new_string": "new"}, id="e")]
        ),
        ScriptedTurn(text="Could not edit."),
    ]
    stdin = lines(control("r1", "initialize"), {"type": "user", "message": {"role": "user", "content": "edit it"}})
    with ScriptedModelServer(turns) as model:
        done = stream_run(la_env, model, stdin, "--permission-mode", "default", "--permission-prompt-tool", "stdio")
    assert done.returncode == 0, done.stderr
    out = [json.loads(line) for line in done.stdout.splitlines()]
    assert [m["result"] for m in out if m["type"] == "result"] == ["Could not edit."]
    assert (la_env.workspace / "a.txt").read_text() == "old\n"  # no one could allow it


def test_malformed_stdin_messages_get_an_answer_or_a_warning_never_a_traceback(la_env) -> None:
    stdin = lines(
        {"type": "user", "message": "not an object"},
        {"type": "control_request", "request_id": "r1", "request": "not an object"},
        control("r2", "set_permission_mode", mode=["plan"]),
        {"type": "control_response", "response": "not an object"},
        {"type": "user", "message": {"role": "user", "content": "hello"}},
    )
    with ScriptedModelServer([ScriptedTurn(text="Hi.")]) as model:
        done = stream_run(la_env, model, stdin)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    out = [json.loads(line) for line in done.stdout.splitlines()]
    errors = {
        m["response"]["request_id"]
        for m in out
        if m["type"] == "control_response" and m["response"]["subtype"] == "error"
    }
    assert errors == {"r1", "r2"}
    assert [m["result"] for m in out if m["type"] == "result"] == ["Hi."]
