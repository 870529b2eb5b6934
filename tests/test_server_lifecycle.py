"""The real llama-server with the real Gemma 3 270M: start, serve, telemetry, crash, restart, stop."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import socket
import time

import httpx2
import pytest

from server.pid_state import pid_alive
from server.supervisor import RestartPolicy, ServerState
from server.telemetry import RequestTimings, TelemetryPoller, parse_metrics

pytestmark = pytest.mark.server

PROMPT = "Write a Python function that returns the sum of a list of numbers, with a docstring and a test."


def chat(base_url: str, max_tokens: int = 96) -> dict:
    response = httpx2.post(
        f"{base_url}/v1/chat/completions",
        json={
            "messages": [{"role": "user", "content": PROMPT}],
            "max_tokens": max_tokens,
            "temperature": 0.0,
            "seed": 1,
        },
        timeout=120.0,
    )
    response.raise_for_status()
    return response.json()


def wait_for(predicate, timeout: float = 60.0, interval: float = 0.25):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError("condition not met in time")


def test_tiny_serves_drafts_restarts_after_kill_and_stops_clean(la_env, llama_server_binary):
    started = la_env.run("server", "start", "tiny", "--port", "auto")
    assert started.code == 0, started.stderr
    [record] = la_env.status()
    assert record["state"] == "ready" and record["profile"] == "tiny"
    assert record["n_ctx"] == 8192
    base_url = f"http://127.0.0.1:{record['port']}"

    body = chat(base_url)
    timings = RequestTimings.from_json(body["timings"])
    assert timings is not None and timings.predicted_n > 0
    assert timings.draft_n is not None and timings.draft_n > 0, body["timings"]

    metrics = parse_metrics(httpx2.get(f"{base_url}/metrics").text)
    assert metrics.tokens_predicted_total >= timings.predicted_n
    assert metrics.draft_tokens_total and metrics.draft_tokens_total >= timings.draft_n
    assert metrics.acceptance is not None and 0.0 <= metrics.acceptance <= 1.0
    assert metrics.mean_accepted_length is not None and metrics.mean_accepted_length >= 1.0

    first_pid = record["server_pid"]
    os.kill(first_pid, signal.SIGKILL)
    restarted = wait_for(
        lambda: next((r for r in la_env.status() if r["state"] == "ready" and r["server_pid"] != first_pid), None)
    )
    assert restarted["restarts"] == 1
    assert chat(base_url, max_tokens=8)["timings"]["predicted_n"] > 0

    owner_pid, server_pid = restarted["owner_pid"], restarted["server_pid"]
    stopped = la_env.run("server", "stop")
    assert stopped.code == 0, stopped.stderr
    assert not pid_alive(owner_pid) and not pid_alive(server_pid)
    assert la_env.status() == []


def test_second_start_attaches_and_status_shows_it(la_env, llama_server_binary):
    first = la_env.run("server", "start", "tiny-baseline", "--port", "auto")
    assert first.code == 0, first.stderr
    [record] = la_env.status()
    port = record["port"]
    assert record["device"] == "CPU"  # this machine's build has no GPU backend
    table = la_env.run("server", "status")
    assert "device" in table.stdout and "CPU" in table.stdout
    again = la_env.run("server", "start", "tiny-baseline", "--port", str(port))
    assert again.code == 0, again.stderr
    assert "attached" in again.stdout
    assert len(la_env.status()) == 1
    # The same port with another model is refused, naming what runs there.
    other = la_env.run("server", "start", "tiny-dflash", "--port", str(port))
    assert other.code != 0
    assert "already serves another model" in other.stderr


def test_killing_the_supervisor_leaves_no_orphan(la_env, llama_server_binary):
    assert la_env.run("server", "start", "tiny-baseline", "--port", "auto").code == 0
    [record] = la_env.status()
    os.kill(record["owner_pid"], signal.SIGKILL)
    # PDEATHSIG: the kernel ends llama-server when its supervisor dies.
    wait_for(lambda: not pid_alive(record["server_pid"]), timeout=15)


def one_line_error(result) -> str:
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    return lines[0]


def test_bad_model_path_is_one_line(la_env, llama_server_binary):
    la_env.write_config('[profiles.broken]\nmodel = "/nowhere/model.gguf"\n')
    result = la_env.run("server", "start", "broken", "--port", "auto")
    assert result.code != 0
    assert "/nowhere/model.gguf does not exist" in one_line_error(result)


def test_bad_flag_in_user_profile_is_one_line(la_env, llama_server_binary):
    la_env.write_config('[profiles.flaggy]\nextends = "tiny"\nextra_args = ["--no-such-flag"]\n')
    result = la_env.run("server", "start", "flaggy", "--port", "auto")
    assert result.code == 2
    assert "--no-such-flag" in one_line_error(result)


def test_bad_value_the_server_rejects_shows_its_log(la_env, llama_server_binary):
    la_env.write_config('[profiles.badvalue]\nextends = "tiny"\nextra_args = ["--flash-attn", "sideways"]\n')
    result = la_env.run("server", "start", "badvalue", "--port", "auto")
    assert result.code == 1
    assert "exited with code" in result.stderr and "Last log lines" in result.stderr
    assert "Traceback" not in result.stderr


def test_occupied_port_is_one_line_and_auto_avoids_it(la_env, llama_server_binary):
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        result = la_env.run("server", "start", "tiny-baseline", "--port", str(port))
        assert result.code == 1
        assert f"port {port} is held by another program" in one_line_error(result)


def test_invalid_config_names_file_and_key(la_env):
    path = la_env.write_config("[server]\nport = 'eighty'\n")
    result = la_env.run("server", "profiles")
    assert result.code == 2
    line = one_line_error(result)
    assert str(path) in line and "server.port" in line
    la_env.write_config("[server\n")
    assert "not valid TOML" in one_line_error(la_env.run("server", "cmd"))
    # `server status` reads the records alone, so a broken config does not hide what is running.
    assert la_env.run("server", "status").code == 0


def test_missing_binary_says_to_build(la_env, tmp_path):
    la_env.without_any_llama_server(tmp_path / "empty-cache")
    result = la_env.run("server", "start", "tiny")
    assert result.code == 1
    assert "localagent server build" in one_line_error(result)


async def test_in_process_supervisor_restarts_and_gives_up(la_env, llama_server_binary):
    from localagent.context import AppContext

    ctx = AppContext.load(la_env.workspace)
    manager = ctx.server_manager()
    manager.restart_policy = RestartPolicy(max_restarts=1, window_s=60, first_backoff_s=0.1)
    states: list[ServerState] = []
    handle = await manager.start_in_process("tiny-baseline", port="auto", on_status=lambda s: states.append(s.state))
    try:
        supervisor = handle.supervisor
        assert supervisor is not None and supervisor.status.state == ServerState.READY
        poller = TelemetryPoller(handle.base_url)
        stats = await poller.poll_once()
        assert stats.reachable and stats.n_ctx == 8192 and stats.speculative is False

        os.kill(supervisor.status.pid, signal.SIGKILL)
        await asyncio.sleep(0.5)
        assert await supervisor.wait_ready(60)
        assert supervisor.status.restarts == 1
        assert ServerState.RESTARTING in states

        os.kill(supervisor.status.pid, signal.SIGKILL)
        for _ in range(100):
            if supervisor.status.state == ServerState.FAILED:
                break
            await asyncio.sleep(0.1)
        assert supervisor.status.state == ServerState.FAILED
        assert re.search(r"died 2 times .* gave up", supervisor.status.message)
        assert not await supervisor.wait_ready(0.1)
    finally:
        await handle.close()
    assert la_env.status() == []
