"""Whole headless sessions against the scripted model server (real HTTP, SSE, tool-call deltas)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

from tests.support.scripted_model import ScriptedModelServer, ScriptedToolCall, ScriptedTurn

BUGGY = "def add(a, b):\n    return a - b\n"
TESTS = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"


def call(name: str, **arguments) -> ScriptedTurn:
    return ScriptedTurn(tool_calls=[ScriptedToolCall(name, arguments)])


def run_json(la_env, model: ScriptedModelServer, *extra: str, task: str = "Do the task.") -> tuple[int, dict, str]:
    task_file = la_env.workspace / "TASK.md"
    task_file.write_text(task)
    result = la_env.run("run", str(task_file), "--base-url", model.base_url, "--output-format", "json", *extra)
    try:
        data = json.loads(result.stdout)
    except ValueError:
        raise AssertionError(f"no JSON on stdout: {result.stdout!r}\nstderr: {result.stderr}") from None
    return result.code, data, result.stderr


def tool_results(request: dict) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "tool"]


def test_writes_a_module_runs_tests_and_fixes_the_failure(la_env):
    turns = [
        call("create", path="calc.py", content=BUGGY),
        call("create", path="test_calc.py", content=TESTS),
        call("bash", command=f"{sys.executable} -m pytest -q test_calc.py"),
        call("edit", path="calc.py", old_string="a - b", new_string="a + b"),
        call("bash", command=f"{sys.executable} -m pytest -q test_calc.py"),
        ScriptedTurn(text="Fixed: add now returns a + b and the test passes."),
    ]
    with ScriptedModelServer(turns) as model:
        code, data, stderr = run_json(la_env, model, "--mode", "full-auto")
        requests = model.requests
    assert code == 0, stderr
    assert data["status"] == "done"
    assert data["final_text"].startswith("Fixed")
    assert data["tool_calls"] == 5
    assert (la_env.workspace / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
    results = tool_results(requests[-1])
    assert "1 failed" in results[2] and "exit code: 1" in results[2]
    assert "1 passed" in results[4]
    assert set(data["files_changed"]) >= {"calc.py", "test_calc.py"}
    # Append-only history: every request extends the previous one byte for byte.
    for earlier, later in zip(requests, requests[1:]):
        assert later["messages"][: len(earlier["messages"])] == earlier["messages"]
        assert later["tools"] == earlier["tools"]


def test_edit_requires_a_view_first_and_the_model_recovers(la_env):
    (la_env.workspace / "a.txt").write_text("hello\n")
    turns = [
        call("edit", path="a.txt", old_string="hello", new_string="bye"),
        call("view", path="a.txt"),
        call("edit", path="a.txt", old_string="hello", new_string="bye"),
        ScriptedTurn(text="done"),
    ]
    with ScriptedModelServer(turns) as model:
        code, data, _ = run_json(la_env, model)
        results = tool_results(model.requests[-1])
    assert code == 0 and data["status"] == "done"
    assert "view" in results[0].lower() and results[0].startswith("Error")
    assert (la_env.workspace / "a.txt").read_text() == "bye\n"


def test_tool_call_printed_as_text_is_executed(la_env):
    text_call = '<tool_call>{"name": "create", "arguments": {"path": "t.txt", "content": "from text\\n"}}</tool_call>'
    with ScriptedModelServer([ScriptedTurn(text=text_call), ScriptedTurn(text="ok")]) as model:
        code, data, _ = run_json(la_env, model)
    assert code == 0 and data["tool_calls"] == 1
    assert (la_env.workspace / "t.txt").read_text() == "from text\n"


def test_three_malformed_calls_end_the_run_with_a_named_status(la_env):
    bad = ScriptedTurn(tool_calls=[ScriptedToolCall("view", '{"pth": "x.txt"')])  # wrong key, torn JSON
    with ScriptedModelServer([bad, bad, bad, ScriptedTurn(text="never")]) as model:
        code, data, _ = run_json(la_env, model)
        results = tool_results(model.requests[-1])
    assert data["status"] == "format_errors" and code == 1
    assert "<tool_call>" in results[0]  # the feedback restates the expected format


def test_repeated_call_is_nudged_then_stopped(la_env):
    (la_env.workspace / "x.txt").write_text("x\n")
    same = call("view", path="x.txt")
    with ScriptedModelServer([same] * 6) as model:
        code, data, _ = run_json(la_env, model)
        results = tool_results(model.requests[-1])
    assert data["status"] == "loop" and code == 1
    assert "times in a row" not in results[1]
    assert "times in a row" in results[2]


def test_headless_denies_what_would_ask_and_tells_the_model(la_env):
    with ScriptedModelServer([call("bash", command="touch made.txt"), ScriptedTurn(text="could not")]) as model:
        code, data, _ = run_json(la_env, model, "--mode", "auto-edit")
        results = tool_results(model.requests[-1])
    assert code == 0
    assert not (la_env.workspace / "made.txt").exists()
    assert "headless" in results[0].lower()


def test_read_only_mode_refuses_edits(la_env):
    with ScriptedModelServer([call("create", path="n.txt", content="x"), ScriptedTurn(text="ok")]) as model:
        run_json(la_env, model, "--mode", "read-only")
        results = tool_results(model.requests[-1])
    assert not (la_env.workspace / "n.txt").exists()
    assert "read-only" in results[0]


def test_max_turns_exits_3(la_env):
    (la_env.workspace / "x.txt").write_text("x\n")
    turns = [call("view", path="x.txt"), call("grep", pattern="x"), ScriptedTurn(text="late")]
    with ScriptedModelServer(turns) as model:
        code, data, _ = run_json(la_env, model, "--max-turns", "2")
    assert code == 3 and data["status"] == "max_turns"


def test_context_overflow_compacts_and_retries_once(la_env):
    (la_env.workspace / "big.txt").write_text("line of text\n" * 400)
    first_turn = [call("view", path="big.txt"), call("glob", pattern="*.txt"), ScriptedTurn(text="read it")]
    with ScriptedModelServer(first_turn) as model:
        assert run_json(la_env, model)[0] == 0
    # Next turn: the server says the context is full; earlier turns are summarised, then retried.
    second_turn = [
        ScriptedTurn.context_overflow(),
        ScriptedTurn(text="summary: viewed big.txt"),
        ScriptedTurn(text="done after compaction"),
    ]
    with ScriptedModelServer(second_turn) as model:
        code, data, stderr = run_json(la_env, model, "--resume", "last", task="Go on.")
        last = model.requests[-1]["messages"]
    assert code == 0, stderr
    assert data["final_text"] == "done after compaction"
    assert "compacted" in stderr
    assert any("Summary of the conversation" in str(m.get("content")) for m in last)
    assert not any("line of text" in str(m.get("content")) for m in last)
    assert last[-1] == {"role": "user", "content": "Go on."}


def test_overflow_within_one_turn_drops_bulky_tool_output(la_env):
    (la_env.workspace / "big.txt").write_text("line of text\n" * 400)
    turns = [call("view", path="big.txt"), ScriptedTurn.context_overflow(), ScriptedTurn(text="ok")]
    with ScriptedModelServer(turns) as model:
        code, data, stderr = run_json(la_env, model)
        last = model.requests[-1]["messages"]
    assert code == 0 and data["final_text"] == "ok", stderr
    tool_outputs = [m["content"] for m in last if m["role"] == "tool"]
    assert tool_outputs and all("output removed to save context" in c for c in tool_outputs)


def test_unmanaged_server_dying_midstream_is_a_clear_error(la_env):
    with ScriptedModelServer([ScriptedTurn(text="a" * 400, die_midstream=True)]) as model:
        code, data, stderr = run_json(la_env, model)
    assert code == 1 and data["status"] == "error"
    assert "failed mid-request" in data["message"]


def test_bad_inputs_are_one_line_errors(la_env):
    missing = la_env.run("run", "nope.md")
    assert missing.code == 2 and "nope.md does not exist" in missing.stderr
    empty = la_env.workspace / "empty.md"
    empty.write_text("  \n")
    assert la_env.run("run", str(empty)).code == 2
    unknown = la_env.run("run", "-", "--profile", "no-such-profile", input="task")
    assert unknown.code == 2 and "unknown profile" in unknown.stderr
    unreachable = la_env.run("run", "-", "--base-url", "http://127.0.0.1:9/v1", input="task")
    assert unreachable.code == 2 and "nothing answers" in unreachable.stderr
    for result in (missing, unknown, unreachable):
        assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_undo_restores_exact_bytes_and_removes_created_files(la_env):
    subprocess.run(["git", "init", "-q"], cwd=la_env.workspace, check=True)
    original = b"keep\r\nthese bytes\x00\xff\n"
    (la_env.workspace / "data.bin").write_bytes(original)
    (la_env.workspace / "notes.txt").write_text("v1\n")
    turns = [
        call("bash", command="printf 'changed' > data.bin && mkdir -p new && echo hi > new/made.txt"),
        call("view", path="notes.txt"),
        call("edit", path="notes.txt", old_string="v1", new_string="v2"),
        ScriptedTurn(text="changed things"),
    ]
    with ScriptedModelServer(turns) as model:
        code, _, stderr = run_json(la_env, model, "--mode", "full-auto")
    assert code == 0, stderr
    assert (la_env.workspace / "new" / "made.txt").exists()
    undone = la_env.run("undo")
    assert undone.code == 0, undone.stderr
    assert (la_env.workspace / "data.bin").read_bytes() == original
    assert (la_env.workspace / "notes.txt").read_text() == "v1\n"
    assert not (la_env.workspace / "new").exists()


def test_resume_after_kill_keeps_the_conversation(la_env):
    slow = ScriptedTurn(text="x" * 2000, chunk_size=4, chunk_delay=0.01)
    with ScriptedModelServer([call("create", path="first.txt", content="1\n"), slow]) as model:
        task = la_env.workspace / "TASK.md"
        task.write_text("Remember the word pineapple.")
        proc = subprocess.Popen(
            [sys.executable, "-m", "localagent.cli", "run", str(task), "--base-url", model.base_url],
            env=la_env.env,
            cwd=la_env.workspace,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 30
        while len(model.requests) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.3)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    sessions = list((la_env.home / "data" / "sessions").glob("*.jsonl"))
    assert len(sessions) == 1
    with ScriptedModelServer([ScriptedTurn(text="resumed")]) as model:
        code, data, stderr = run_json(la_env, model, "--resume", "last", task="And now?")
        messages = model.requests[0]["messages"]
    assert code == 0, stderr
    contents = [str(m.get("content")) for m in messages]
    assert any("pineapple" in c for c in contents)
    assert any(m["role"] == "tool" for m in messages)
    assert contents[-1] == "And now?"
    assert messages[0]["role"] == "system" and "localagent" in messages[0]["content"]
    assert (la_env.workspace / "first.txt").read_text() == "1\n"


def test_sessions_lists_runs_of_this_workspace(la_env):
    with ScriptedModelServer([ScriptedTurn(text="hi")]) as model:
        run_json(la_env, model, task="Greet the user politely.")
    listed = la_env.run("sessions")
    assert listed.code == 0, listed.stderr
    assert "Greet the user politely." in listed.stdout
    missing = la_env.run("run", "-", "--resume", "20990101-000000-abcdef", input="x")
    assert missing.code == 2 and "sessions" in missing.stderr


async def test_context_past_the_threshold_is_compacted_before_the_next_request(la_env):
    from agent.events import Notice, TurnFinished
    from localagent.agent_setup import AgentOptions, build_agent
    from localagent.context import AppContext

    # Enough to pass 80% of the 4000-token context with the prompt and tool schemas, not enough to overflow it.
    (la_env.workspace / "big.txt").write_text("line of text\n" * 360)
    turns = [
        call("view", path="big.txt"),
        ScriptedTurn(text="read it"),
        ScriptedTurn(text="summary: the user had big.txt read"),
        ScriptedTurn(text="second answer"),
    ]
    with ScriptedModelServer(turns, n_ctx=4000) as model:
        ctx = AppContext.load(la_env.workspace)
        runtime = await build_agent(ctx, AgentOptions(base_url=model.base_url, headless=True))
        try:
            first = [e async for e in runtime.agent.run_turn("Read big.txt")]
            assert runtime.agent.last_context_used > 0.8 * 4000, runtime.agent.last_context_used
            second = [e async for e in runtime.agent.run_turn("Now what?")]
        finally:
            await runtime.close()
        last = model.requests[-1]["messages"]
    assert not any(isinstance(e, Notice) for e in first)
    assert any(isinstance(e, Notice) and "compacted" in e.text for e in second)
    assert isinstance(second[-1], TurnFinished) and second[-1].final_text == "second answer"
    assert any("Summary of the conversation" in str(m.get("content")) for m in last)
    assert not any("line of text" in str(m.get("content")) for m in last)
