"""Headless runs end the way they should: signals stop the running command, resume repairs the
history, empty answers are not success, bad flags are one line."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from tests.support.scripted_model import ScriptedModelServer, ScriptedToolCall, ScriptedTurn


def _start_run(la_env, model, *extra: str) -> subprocess.Popen:
    task = la_env.workspace / "TASK.md"
    task.write_text("go")
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "localagent.cli",
            "run",
            str(task),
            "--base-url",
            model.base_url,
            "--mode",
            "full-auto",
            "--output-format",
            "json",
            *extra,
        ],
        env=la_env.env,
        cwd=la_env.workspace,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait(predicate, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.05)


def _sleepers(marker: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmdline = open(f"/proc/{entry}/cmdline", "rb").read().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if marker in cmdline and "localagent" not in cmdline:
                found.append(int(entry))
    return found


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_stop_signal_kills_the_running_command_and_records_the_turn(la_env, signum):
    marker = f"sleep 3{signum}.37"
    command = f"{marker}; echo after > after.txt"
    turns = [ScriptedTurn(tool_calls=[ScriptedToolCall("bash", {"command": command})]), ScriptedTurn(text="done")]
    with ScriptedModelServer(turns) as model:
        proc = _start_run(la_env, model)
        _wait(lambda: _sleepers(marker))
        proc.send_signal(signum)
        stdout, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 128 + signum, stderr
    assert "Traceback" not in stderr
    _wait(lambda: not _sleepers(marker), timeout=10)
    time.sleep(0.5)
    assert not (la_env.workspace / "after.txt").exists()
    assert json.loads(stdout)["status"] == "cancelled"
    [session] = list((la_env.home / "data" / "sessions").glob("*.jsonl"))
    events = [json.loads(line) for line in session.read_text().splitlines()]
    finished = [e for e in events if e["type"] == "turn_finished"]
    assert finished and finished[-1]["reason"] == "cancelled"


def test_resume_after_sigkill_mid_call_gives_the_call_an_interrupted_result(la_env):
    turns = [ScriptedTurn(tool_calls=[ScriptedToolCall("bash", {"command": "sleep 41.7"}, id="call_slow")])]
    with ScriptedModelServer(turns) as model:
        proc = _start_run(la_env, model)
        _wait(lambda: _sleepers("sleep 41.7"))
        proc.kill()
        proc.wait()
    for pid in _sleepers("sleep 41.7"):
        os.kill(pid, signal.SIGKILL)
    task = la_env.workspace / "TASK.md"
    task.write_text("And now?")
    with ScriptedModelServer([ScriptedTurn(text="resumed")]) as model:
        result = la_env.run("run", str(task), "--base-url", model.base_url, "--resume", "last")
        messages = model.requests[0]["messages"]
    assert result.code == 0, result.stderr
    roles = [m["role"] for m in messages]
    call_at = next(i for i, m in enumerate(messages) if m.get("tool_calls"))
    assert roles[call_at + 1] == "tool" and messages[call_at + 1]["tool_call_id"] == "call_slow"
    assert "interrupted" in messages[call_at + 1]["content"]
    assert messages[-1] == {"role": "user", "content": "And now?"}


@pytest.mark.parametrize(
    ("second", "status"),
    [(ScriptedTurn(text=""), "empty_answer"), (ScriptedTurn(text="", finish_reason="length"), "length")],
)
def test_an_empty_or_cut_off_answer_is_nudged_once_then_not_done(la_env, second, status):
    with ScriptedModelServer([ScriptedTurn(text=""), second]) as model:
        proc = _start_run(la_env, model)
        stdout, stderr = proc.communicate(timeout=60)
        nudge = model.requests[-1]["messages"][-1]
    assert proc.returncode == 1, stderr
    assert json.loads(stdout)["status"] == status
    assert nudge["role"] == "user" and "empty" in nudge["content"]


def test_one_empty_answer_then_text_is_done(la_env):
    with ScriptedModelServer([ScriptedTurn(text=""), ScriptedTurn(text="here it is")]) as model:
        proc = _start_run(la_env, model)
        stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 0, stderr
    assert json.loads(stdout)["status"] == "done"


@pytest.mark.parametrize(
    ("args", "env", "words"),
    [
        (["--timeout", "-5"], {}, "--timeout"),
        (["--timeout", "nan"], {}, "--timeout"),
        (["--base-url", "http://[::1"], {}, "--base-url"),
        (["--base-url", "localhost:8910"], {}, "--base-url"),
        ([], {"LOCALAGENT_AGENT__PERMISSIONS": "{bad"}, "LOCALAGENT_AGENT__PERMISSIONS"),
        (["--base-url", "http://127.0.0.1:9\n"], {}, "control characters"),
        ([], {"LOCALAGENT_SERVER__BASE_URL": "http://127.0.0.1:99999"}, "LOCALAGENT_SERVER__BASE_URL"),
        (["--resume", ""], {}, "--resume"),
    ],
)
def test_bad_flags_and_environment_values_are_one_line_exit_2(la_env, args, env, words):
    task = la_env.workspace / "TASK.md"
    task.write_text("go")
    la_env.env.update(env)
    result = la_env.run("run", str(task), *args)
    assert result.code == 2, result.stderr
    assert "Traceback" not in result.stderr and words in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_undo_restores_ignored_files_the_agent_tools_changed(la_env):
    ws = la_env.workspace
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=ws, check=True)
    (ws / ".gitignore").write_text(".env\nbuild/\n")
    (ws / ".env").write_text("TOKEN=original\n")
    turns = [
        ScriptedTurn(tool_calls=[ScriptedToolCall("view", {"path": ".env"})]),
        ScriptedTurn(
            tool_calls=[ScriptedToolCall("edit", {"path": ".env", "old_string": "original", "new_string": "changed"})]
        ),
        ScriptedTurn(tool_calls=[ScriptedToolCall("create", {"path": "build/out.txt", "content": "made\n"})]),
        ScriptedTurn(text="done"),
    ]
    with ScriptedModelServer(turns) as model:
        proc = _start_run(la_env, model)
        stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 0, stderr
    assert (ws / ".env").read_text() == "TOKEN=changed\n"
    undone = la_env.run("undo")
    assert undone.code == 0, undone.stderr
    assert (ws / ".env").read_text() == "TOKEN=original\n"
    assert not (ws / "build" / "out.txt").exists()


async def test_saved_outputs_are_private_made_only_when_cut_and_capped(tmp_path, monkeypatch):
    import stat as stat_mod

    from tools import output_capture
    from tools.output_capture import OutputCapture

    scratch = tmp_path / "tool-output" / "session"
    short = OutputCapture(scratch, "bash")
    short.add(b"hello\n")
    assert short.close(keep_spool=True) is None and not scratch.exists()  # no empty leftovers

    monkeypatch.setattr(output_capture, "HEAD_BYTES", 10)
    monkeypatch.setattr(output_capture, "TAIL_BYTES", 10)
    monkeypatch.setattr(output_capture, "SPOOL_AFTER_BYTES", 20)
    monkeypatch.setattr(output_capture, "MAX_SESSION_SPOOL_BYTES", 100)
    long = OutputCapture(scratch, "bash")
    for _ in range(10):
        long.add(b"0123456789" * 3)
    saved = long.close(keep_spool=True)
    assert saved is not None and saved.read_bytes() == b"0123456789" * 10  # capped at the session's 100
    assert long.spool_overflowed
    assert stat_mod.S_IMODE(saved.stat().st_mode) == 0o600
    assert stat_mod.S_IMODE(scratch.stat().st_mode) == 0o700
    assert stat_mod.S_IMODE(scratch.parent.stat().st_mode) == 0o700
    full = OutputCapture(scratch, "bash")
    full.add(b"x" * 50)
    assert full.close(keep_spool=True) is None and full.spool_overflowed  # the session's cap is used up


def test_a_run_that_cannot_connect_leaves_no_session_to_hide_the_last_one(la_env):
    task = la_env.workspace / "TASK.md"
    task.write_text("go")
    with ScriptedModelServer([ScriptedTurn(text="first")]) as model:
        assert la_env.run("run", str(task), "--base-url", model.base_url).code == 0
    sessions = la_env.home / "data" / "sessions"
    before = sorted(p.name for p in sessions.glob("*.jsonl"))
    failed = la_env.run("run", str(task), "--base-url", "http://127.0.0.1:9/v1")
    assert failed.code == 2 and "nothing answers" in failed.stderr
    assert sorted(p.name for p in sessions.glob("*.jsonl")) == before
