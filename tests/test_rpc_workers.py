"""llama.cpp RPC workers, managed: `localagent server worker` runs the real rpc-server (built with
llama-server), a profile's rpc_workers split the real tiny model over them, a worker killed
mid-answer is named, and both supervisors bring everything back."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx2
import pytest

from server.argv import ResolvedModels, build_launch_plan
from server.capabilities import parse_help
from server.errors import ProfileError
from server.exit_reasons import explain_exit
from server.pid_state import pid_alive
from server.pinned_binary import PINNED_HELP
from server.ports import free_port
from server.profile_loading import load_profiles
from server.profiles import BUILTIN_PROFILES
from server.rpc_connections import connected_workers
from server.rpc_endpoints import EndpointError, parse_endpoint, silent_workers
from server.rpc_worker import find_worker_binary, worker_plan
from server.telemetry import RequestTimings

HELP = PINNED_HELP.read_text()
PROMPT = "Repeat this list exactly, twice: alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu."


def test_worker_addresses_are_host_and_port() -> None:
    assert parse_endpoint("192.168.1.20:50052") == ("192.168.1.20", 50052)
    assert parse_endpoint("gpu-box.lan:50052") == ("gpu-box.lan", 50052)
    for bad in ("192.168.1.20", ":50052", "host:0", "host:99999", "[fe80::1]:50052", "a,b:1", "host:port"):
        with pytest.raises(EndpointError):
            parse_endpoint(bad)


def test_a_profile_with_a_bad_worker_or_split_is_one_clear_error() -> None:
    with pytest.raises(ProfileError, match=r"rpc_workers: .*'box' is not host:port"):
        load_profiles({"split": {"extends": "tiny-rpc", "rpc_workers": ["box"]}})
    with pytest.raises(ProfileError, match="listed twice"):
        load_profiles({"split": {"extends": "tiny-rpc", "rpc_workers": ["a:1", "a:1"]}})
    with pytest.raises(ProfileError, match="tensor_split"):
        load_profiles({"split": {"extends": "tiny-rpc", "tensor_split": [0, 0]}})


def test_the_plan_passes_workers_and_split_and_warns_off_loopback(tmp_path: Path) -> None:
    caps = parse_help(HELP)
    models = ResolvedModels(model=tmp_path / "m.gguf")
    local = build_launch_plan(BUILTIN_PROFILES["tiny-rpc"], caps, tmp_path / "llama-server", models)
    argv = local.argv
    assert argv[argv.index("--rpc") + 1] == "127.0.0.1:50052,127.0.0.1:50053"
    assert argv[argv.index("--tensor-split") + 1] == "1,1"
    assert argv[argv.index("-ngl") + 1] == "all"
    assert local.rpc_workers == ("127.0.0.1:50052", "127.0.0.1:50053")
    assert not any("RPC" in note for note in local.notes)
    remote = load_profiles({"lan": {"extends": "tiny-rpc", "rpc_workers": ["10.0.0.7:50052"]}})["lan"]
    notes = build_launch_plan(remote, caps, tmp_path / "llama-server", models).notes
    assert any("10.0.0.7:50052" in note and "without authentication" in note for note in notes)
    # A binary without the flag at all is named, not given a command it would reject.
    without = parse_help("\n".join(line for line in HELP.splitlines() if not line.startswith("--rpc")))
    with pytest.raises(ProfileError, match="RPC workers"):
        build_launch_plan(BUILTIN_PROFILES["tiny-rpc"], without, tmp_path / "x", models)


def test_a_worker_binds_loopback_unless_told_and_warns_otherwise(tmp_path: Path) -> None:
    plan = worker_plan(tmp_path / "rpc-server", port=50060, threads=2)
    assert plan.argv[1:] == ["-H", "127.0.0.1", "-p", "50060", "-t", "2"] and plan.notes == []
    assert plan.readiness == "tcp" and plan.program == "rpc-server"
    exposed = worker_plan(tmp_path / "rpc-server", host="0.0.0.0")
    assert len(exposed.notes) == 1 and "no authentication" in exposed.notes[0]


def test_a_death_names_the_worker_that_stopped_answering() -> None:
    with socket.socket() as alive:
        alive.bind(("127.0.0.1", 0))
        alive.listen()
        up = f"127.0.0.1:{alive.getsockname()[1]}"
        down = f"127.0.0.1:{free_port()}"
        silent = silent_workers([up, down])
    assert silent == [down]
    reason = explain_exit(-6, while_loading=False, silent_workers=silent)
    assert reason.headline.startswith("llama-server was killed by SIGABRT: RPC worker " + down)
    assert f"localagent server worker --port {down.rsplit(':', 1)[1]}" in reason.headline
    remote = explain_exit(-6, while_loading=False, silent_workers=["10.0.0.7:50052"])
    assert "`localagent server worker --port 50052 --host 10.0.0.7`" in remote.headline
    no_backend = explain_exit(1, while_loading=True, log_tail=["error: RPC not supported in this build"])
    assert "without the RPC backend" in no_backend.headline


def test_the_kernel_says_which_worker_connection_dropped() -> None:
    """Without connecting to any worker: this process's own sockets, as /proc/net/tcp lists them."""
    with socket.socket() as first, socket.socket() as second:
        for listener in (first, second):
            listener.bind(("127.0.0.1", 0))
            listener.listen()
        endpoints = [f"127.0.0.1:{listener.getsockname()[1]}" for listener in (first, second)]
        clients = [socket.create_connection(("127.0.0.1", listener.getsockname()[1])) for listener in (first, second)]
        accepted = [listener.accept()[0] for listener in (first, second)]
        try:
            assert connected_workers(os.getpid(), endpoints) == set(endpoints)
            accepted[1].close()  # the second worker's end goes away: ours is left in CLOSE_WAIT
            time.sleep(0.1)
            assert connected_workers(os.getpid(), endpoints) == {endpoints[0]}
        finally:
            for sock in (*clients, *accepted):
                sock.close()


# -- the real thing ------------------------------------------------------------------------------


class Worker:
    """`localagent server worker` as a user runs it, in its own process."""

    def __init__(self, la_env, port: int) -> None:
        self.port = port
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "localagent.cli", "server", "worker", "--port", str(port), "--threads", "1"],
            env=la_env.env,
            cwd=la_env.workspace,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    def wait_for(self, pattern: str, after: int = 0, timeout: float = 120.0) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in self.lines[after:]:
                if match := re.search(pattern, line):
                    return match
            if self.proc.poll() is not None and not self._reader.is_alive():
                break
            time.sleep(0.1)
        raise AssertionError(f"worker on {self.port} never printed {pattern!r}: {self.lines}")

    def ready_pid(self, after: int = 0) -> int:
        return int(self.wait_for(r"RPC worker ready on 127\.0\.0\.1:\d+ \(pid (\d+)\)", after).group(1))

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()


def stream_until_broken(base_url: str, on_first_chunk) -> tuple[int, str]:
    """A streamed answer; ``on_first_chunk`` runs once content flows. (chunks, how it ended)"""
    chunks = 0
    body = {
        "messages": [{"role": "user", "content": PROMPT}],
        "max_tokens": 400,
        "temperature": 0.0,
        "stream": True,
        "seed": 1,
    }
    try:
        with httpx2.stream("POST", f"{base_url}/v1/chat/completions", json=body, timeout=120.0) as response:
            for line in response.iter_lines():
                if line.startswith("data:") and '"content"' in line:
                    chunks += 1
                    if chunks == 3:
                        on_first_chunk()
                if line.strip() == "data: [DONE]":
                    return chunks, "done"
    except httpx2.HTTPError as exc:
        return chunks, type(exc).__name__
    return chunks, "ended without [DONE]"


def chat(base_url: str) -> dict:
    response = httpx2.post(
        f"{base_url}/v1/chat/completions",
        json={"messages": [{"role": "user", "content": PROMPT}], "max_tokens": 96, "temperature": 0.0, "seed": 1},
        timeout=180.0,
    )
    response.raise_for_status()
    return response.json()


@pytest.mark.server
def test_two_workers_serve_the_tiny_model_and_a_killed_one_is_named_and_recovered(la_env, llama_server_binary):
    assert find_worker_binary(llama_server_binary) is not None, "the build has no rpc-server next to llama-server"
    ports = free_port(), free_port()
    while ports[1] == ports[0]:
        ports = ports[0], free_port()
    workers = [Worker(la_env, port) for port in ports]
    try:
        worker_pids = [worker.ready_pid() for worker in workers]
        endpoints = [f"127.0.0.1:{port}" for port in ports]
        la_env.write_config(
            '[profiles.split]\nextends = "tiny-rpc"\nthreads = 1\n'
            f"rpc_workers = [{', '.join(repr(e).replace(chr(39), chr(34)) for e in endpoints)}]\n"
        )
        started = la_env.run("server", "start", "split", "--port", "auto", timeout=300)
        assert started.code == 0, started.stderr
        [record] = la_env.status()
        assert record["argv"][record["argv"].index("--rpc") + 1] == ",".join(endpoints)
        base_url = f"http://127.0.0.1:{record['port']}"

        body = chat(base_url)
        timings = RequestTimings.from_json(body["timings"])
        assert timings is not None and timings.predicted_n > 0
        assert timings.draft_n and timings.draft_n > 0, body["timings"]  # ngram speculation drafted
        assert timings.draft_n_accepted is not None and 0 <= timings.draft_n_accepted <= timings.draft_n
        for worker in workers:  # both hold layers: both were connected to
            worker_log = la_env.home / "state" / "logs" / f"rpc-worker-{worker.port}.log"
            assert "Accepted client connection" in worker_log.read_text(errors="replace")

        # Kill the second worker's rpc-server while an answer streams.
        seen = len(workers[1].lines)
        chunks, ended = stream_until_broken(base_url, lambda: os.kill(worker_pids[1], signal.SIGKILL))
        assert chunks >= 3 and ended != "done", (chunks, ended)
        # The worker's supervisor says what happened and starts it again.
        workers[1].wait_for(r"rpc-server was killed by SIGKILL", after=seen)
        assert workers[1].ready_pid(after=seen) != worker_pids[1]
        # The server's supervisor names the worker that went, and brings the server back.
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            [record] = la_env.status()
            if record["state"] == "ready" and record["restarts"] >= 1:
                break
            time.sleep(0.5)
        assert record["state"] == "ready" and record["restarts"] >= 1, record
        assert f"RPC worker {endpoints[1]}" in record["last_exit"], record
        assert endpoints[0] not in record["last_exit"]
        again = chat(base_url)
        assert again["timings"]["predicted_n"] > 0
        status = la_env.run("server", "status")
        assert f"RPC worker {endpoints[1]}" in status.stdout

        # A worker gone for longer (its machine rebooting): the server's supervisor waits for it
        # instead of spending its restarts, and comes back once it answers.
        assert workers[1].stop() == 0
        restarts = record["restarts"]
        with pytest.raises(httpx2.HTTPError):
            chat(base_url)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            [record] = la_env.status()
            if "waiting for RPC worker" in record["message"]:
                break
            time.sleep(0.5)
        assert record["message"] == f"waiting for RPC worker {endpoints[1]} to answer before restarting", record
        time.sleep(3)  # still waiting: no start was tried, none counted
        [record] = la_env.status()
        assert record["state"] == "restarting" and record["restarts"] == restarts + 1, record
        workers[1] = Worker(la_env, ports[1])
        worker_pids[1] = workers[1].ready_pid()
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and la_env.status()[0]["state"] != "ready":
            time.sleep(0.5)
        assert chat(base_url)["timings"]["predicted_n"] > 0
    finally:
        la_env.run("server", "stop", timeout=60)
        codes = [worker.stop() for worker in workers]
    assert codes == [0, 0], [worker.lines for worker in workers]
    assert all(not pid_alive(pid) for pid in worker_pids)
    assert any("stopped the RPC worker" in line for line in workers[0].lines)


def test_server_start_warns_about_workers_off_loopback_too(la_env, llama_server_binary) -> None:
    """The warning reaches the person starting the server, not only `server cmd`."""
    from localagent.context import AppContext

    la_env.write_config('[profiles.lan]\nextends = "tiny-rpc"\nrpc_workers = ["10.0.0.7:50052"]\n')
    manager = AppContext.load(la_env.workspace).server_manager()
    manager._plan_for_port("lan", "auto")
    assert len(manager.notes) == 1 and "10.0.0.7:50052 are reached without authentication" in manager.notes[0]
    manager.notes.clear()
    manager._plan_for_port("tiny-rpc", "auto")
    assert manager.notes == []
