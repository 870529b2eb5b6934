"""``localagent launch``: the agents' settings, the context check with its measured and cached
prompt, and the request meter in both of its modes.

The agents are stand-ins: one small Python script named ``claude``, ``codex`` or ``opencode``
first on PATH. Run as the agent would be for real, it writes its argv and environment to a file;
run as the measurement runs it, it sends one streamed request of its agent's protocol (a system
prompt of a chosen size, and tools) to where its settings point, and logs what came back.
Most tests put a small counting server in place of llama-server; three use the real one."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx2
import pytest

from localagent import cli
from localagent.launch import local_server
from localagent.launch.agents import AGENTS, CODEX_KEY_VARIABLE
from localagent.launch.context_check import ROOM_FOR_WORK
from localagent.launch.local_server import LocalServer
from localagent.launch.prompt_cache import CACHE_FILE
from localagent.launch.request_meter import RequestMeter
from server.profiles import CHATML_TOOLS_TEMPLATE
from tests.support.llama_process import running_llama_server

STAND_IN = r"""
import json, os, re, subprocess, sys, urllib.error, urllib.request

NAME = os.path.basename(sys.argv[0])
ARGS = sys.argv[1:]
MEASURE_ARGS = {measure_args}
VERSION = os.environ.get("STANDIN_VERSION", "1.0.0")


def log(entry):
    with open(os.environ["STANDIN_LOG"], "a") as handle:
        handle.write(json.dumps(entry) + "\n")


def system_prompt():
    return "word " * int(os.environ.get("STANDIN_PROMPT_WORDS", "200"))


def claude_request():
    body = {{
        "model": os.environ["ANTHROPIC_MODEL"], "max_tokens": 32000, "stream": True,
        "system": [{{"type": "text", "text": system_prompt()}}],
        "tools": [{{"name": "Bash", "description": "Run a command",
                   "input_schema": {{"type": "object", "properties": {{"command": {{"type": "string"}}}}}}}}],
        "messages": [{{"role": "user", "content": [{{"type": "text", "text": ARGS[-1]}}]}}],
    }}
    url = os.environ["ANTHROPIC_BASE_URL"] + "/v1/messages?beta=true"
    return url, os.environ["ANTHROPIC_AUTH_TOKEN"], body


def codex_request():
    provider = next(a for a in ARGS if a.startswith("model_providers."))
    base_url = re.search(r'base_url = "([^"]+)"', provider).group(1)
    body = {{
        "model": ARGS[ARGS.index("-m") + 1], "stream": True, "instructions": system_prompt(),
        "input": [{{"role": "user", "content": [{{"type": "input_text", "text": ARGS[-1]}}]}}],
        "tools": [{{"type": "function", "name": "shell", "parameters": {{"type": "object", "properties": {{}}}}}}],
    }}
    return base_url + "/responses", os.environ["{codex_key}"], body


def opencode_request():
    config = json.loads(os.environ["OPENCODE_CONFIG_CONTENT"])
    provider = config["provider"]["localagent"]
    body = {{
        "model": config["model"].split("/", 1)[1], "stream": True, "stream_options": {{"include_usage": True}},
        "messages": [{{"role": "system", "content": system_prompt()}}, {{"role": "user", "content": ARGS[-1]}}],
        "tools": [{{"type": "function", "function": {{"name": "bash", "parameters": {{"type": "object", "properties": {{}}}}}}}}],
    }}
    return provider["options"]["baseURL"] + "/chat/completions", provider["options"]["apiKey"], body


def text_of(event):
    if event.get("type") == "content_block_delta":
        return event["delta"].get("text", "")
    if event.get("type") == "response.output_text.delta":
        return event["delta"]
    choices = event.get("choices") or [{{}}]
    return (choices[0].get("delta") or {{}}).get("content") or ""


def measure():
    if os.environ.get("STANDIN_FAIL"):
        print("Invalid API key: please run /login")
        sys.exit(3)
    where = {{"measured": NAME, "cwd": os.getcwd(), "files": sorted(os.listdir(".")), "prompt": ARGS[-1]}}
    if os.environ.get("STANDIN_HELPER"):  # a helper of its own, left running when it exits
        helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
        where["helper"] = helper.pid
    url, key, body = globals()[NAME + "_request"]()
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST")
    request.add_header("Content-Type", "application/json")
    request.add_header("Authorization", "Bearer " + key)
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            stream = answer.read().decode()
    except urllib.error.HTTPError as failed:
        log(where | {{"status": failed.code}})
        sys.exit(1)
    events = [json.loads(line[5:]) for line in stream.splitlines() if line.startswith("data:") and "[DONE]" not in line]
    log(where | {{"types": [e.get("type") for e in events], "text": "".join(text_of(e) for e in events)}})


if ARGS == ["--version"]:
    print({{"claude": VERSION + " (Claude Code)", "codex": "codex-cli " + VERSION}}.get(NAME, VERSION))
elif len(ARGS) >= len(MEASURE_ARGS[NAME]) and ARGS[-len(MEASURE_ARGS[NAME]) : -1] == MEASURE_ARGS[NAME][:-1]:
    measure()  # the measuring command line, whatever its prompt
else:
    with open(os.environ["STANDIN_REPORT"], "w") as handle:
        json.dump({{"name": NAME, "argv": ARGS, "env": dict(os.environ), "cwd": os.getcwd()}}, handle)
    sys.exit(int(os.environ.get("STANDIN_EXIT", "0")))
"""


@pytest.fixture
def stand_ins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The three stand-in agents, first on PATH; their log and report files in tmp_path. A home
    of the test's own keeps the measured prompts and settings apart from the machine's."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    measure_args = {name: list(agent.measure_args) for name, agent in AGENTS.items()}
    script = f"#!{sys.executable}\n" + STAND_IN.format(measure_args=measure_args, codex_key=CODEX_KEY_VARIABLE)
    for name in AGENTS:
        (bin_dir / name).write_text(script)
        (bin_dir / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("STANDIN_LOG", str(tmp_path / "measured.log"))
    monkeypatch.setenv("STANDIN_REPORT", str(tmp_path / "report.json"))
    monkeypatch.setenv("LOCALAGENT_HOME", str(tmp_path / "home"))
    return tmp_path


def measured_runs(tmp: Path) -> list[dict]:
    log = tmp / "measured.log"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def report(tmp: Path) -> dict:
    return json.loads((tmp / "report.json").read_text())


class CountingServer:
    """In place of llama-server: its three token-count routes, counting words, so a prompt's size
    is known exactly; every request's path and Authorization header are kept."""

    def __init__(self) -> None:
        seen: list[tuple[str, str | None]] = []
        self.seen = seen
        self.count_status = 200  # 404: a server without llama-server's count routes
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                seen.append((self.path, self.headers.get("Authorization")))
                answer = json.dumps({"input_tokens": len(body.split())}).encode()
                counts = self.path.endswith(("/count_tokens", "/input_tokens"))
                self.send_response(owner.count_status if counts else 404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture
def counting_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[CountingServer]:
    """The counting server as the profile's server, with an API key and an 8k context per slot."""
    server = CountingServer()

    async def fake_start(ctx: object, given: str | None) -> LocalServer:
        return LocalServer(given or "tiny", server.url, "sekret", "tiny-model", 8192, given or "tiny")

    monkeypatch.setattr(local_server, "start_or_attach", fake_start)
    yield server
    server.close()


def launch(capsys: pytest.CaptureFixture[str], *words: str) -> tuple[int, str]:
    """``localagent launch WORDS`` in this process: its exit code and what it said on stderr."""
    capsys.readouterr()
    with pytest.raises(SystemExit) as exited:
        cli.main(["launch", *words])
    code = exited.value.code
    return code if isinstance(code, int) else 1, capsys.readouterr().err


def test_a_missing_agent_is_one_line_naming_its_install_command(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no claude here, and no server is started for it
    monkeypatch.setenv("LOCALAGENT_HOME", str(tmp_path / "home"))
    code, said = launch(capsys, "claude")
    assert code == 2
    assert said.strip().count("\n") == 0
    assert "claude is not installed" in said and "npm install -g @anthropic-ai/claude-code" in said
    assert not (tmp_path / "home" / "state" / "servers").exists()


@pytest.mark.parametrize("name", sorted(AGENTS))
def test_each_agent_is_pointed_at_the_server_with_its_arguments_after_the_dashes(
    name, stand_ins, counting_server, monkeypatch, capsys
) -> None:
    monkeypatch.setenv("STANDIN_EXIT", "7")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "the-persons-own-key")
    code, _said = launch(capsys, name, "--no-check", "--", "-p", "fix it", "--resume")
    assert code == 7  # the agent's exit code is localagent's
    got = report(stand_ins)
    assert got["argv"][-3:] == ["-p", "fix it", "--resume"]
    env = got["env"]
    if name == "claude":
        assert env["ANTHROPIC_BASE_URL"] == counting_server.url
        assert env["ANTHROPIC_AUTH_TOKEN"] == "sekret" and "ANTHROPIC_API_KEY" not in env
        assert env["ANTHROPIC_MODEL"] == env["ANTHROPIC_DEFAULT_HAIKU_MODEL"] == "tiny-model"
        for setting in ("DISABLE_TELEMETRY", "DISABLE_AUTOUPDATER", "DISABLE_ERROR_REPORTING"):
            assert env[setting] == "1"
        assert env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] == "1"
        assert env["CLAUDE_CODE_MAX_CONTEXT_TOKENS"] == "8192" and env["CLAUDE_CODE_MAX_OUTPUT_TOKENS"] == "2048"
    elif name == "codex":
        argv = " ".join(got["argv"])
        assert f'base_url = "{counting_server.url}/v1"' in argv and 'wire_api = "responses"' in argv
        assert 'model_provider="localagent"' in argv and "-m tiny-model" in argv
        assert "check_for_update_on_startup=false" in argv and "analytics.enabled=false" in argv
        assert "model_context_window=8192" in argv
        assert env[CODEX_KEY_VARIABLE] == "sekret"
    else:
        config = json.loads(env["OPENCODE_CONFIG_CONTENT"])
        provider = config["provider"]["localagent"]
        assert provider["npm"] == "@ai-sdk/openai-compatible"
        assert provider["options"] == {"baseURL": f"{counting_server.url}/v1", "apiKey": "sekret"}
        assert provider["models"]["tiny-model"]["limit"]["context"] == 8192
        assert config["model"] == "localagent/tiny-model" and config["autoupdate"] is False
        assert env["OPENCODE_DISABLE_AUTOUPDATE"] == "1"
    assert measured_runs(stand_ins) == []  # --no-check: not measured


def test_a_prompt_too_large_for_the_profile_is_refused_before_the_agent_runs(
    stand_ins, counting_server, monkeypatch, capsys
) -> None:
    monkeypatch.setenv("STANDIN_PROMPT_WORDS", "9000")
    code, said = launch(capsys, "claude", "tiny")
    assert code == 2
    error = said.strip().splitlines()[-1]
    assert error.startswith("error: claude's own prompt is 9,0") and "profile tiny holds 8,192 per slot" in error
    assert "Use a profile with a larger context (" in error and ": 32,768)" in error
    assert not (stand_ins / "report.json").exists()  # the agent never ran
    # The meter answered the stand-in with a valid Anthropic stream, and sent the server's key on.
    [run] = measured_runs(stand_ins)
    assert run["text"] == "Hello." and run["types"][0] == "message_start" and run["types"][-1] == "message_stop"
    assert counting_server.seen == [("/v1/messages/count_tokens", "Bearer sekret")]


def test_a_prompt_that_fits_is_measured_once_per_version_and_remeasured_on_request(
    stand_ins, counting_server, monkeypatch, capsys
) -> None:
    monkeypatch.setenv("STANDIN_PROMPT_WORDS", "1000")
    code, said = launch(capsys, "claude", "tiny", "--", "hello")
    assert code == 0, said
    assert "claude 1.0.0: its prompt takes 1,0" in said and "of 8,192 tokens (1" in said
    assert report(stand_ins)["argv"][-1] == "hello"
    assert len(measured_runs(stand_ins)) == 1
    cache = json.loads((stand_ins / "home" / "state" / CACHE_FILE).read_text())
    [entry] = cache["prompts"].values()
    assert entry["agent"] == "claude" and entry["version"] == "1.0.0" and entry["model"] == "tiny-model"

    monkeypatch.setenv("STANDIN_PROMPT_WORDS", "9000")  # a longer prompt the cache does not know of
    code, said = launch(capsys, "claude", "tiny")
    assert code == 0 and len(measured_runs(stand_ins)) == 1  # the cached measure, no second run

    code, said = launch(capsys, "claude", "--remeasure", "tiny")
    assert code == 2 and "claude's own prompt is 9,0" in said and len(measured_runs(stand_ins)) == 2

    monkeypatch.setenv("STANDIN_PROMPT_WORDS", "1000")
    monkeypatch.setenv("STANDIN_VERSION", "1.1.0")  # a new version is measured anew
    code, said = launch(capsys, "claude", "tiny")
    assert code == 0 and "claude 1.1.0: its prompt takes" in said and len(measured_runs(stand_ins)) == 3


def test_an_agent_that_fails_while_measured_is_one_line_with_its_last_words(
    stand_ins, counting_server, monkeypatch, capsys
) -> None:
    monkeypatch.setenv("STANDIN_FAIL", "1")
    code, said = launch(capsys, "claude")
    assert code == 1
    assert said.strip().splitlines()[-1] == (
        "error: claude exited (code 3) before asking the model anything: Invalid API key: please run /login"
    )
    assert not (stand_ins / "report.json").exists() and counting_server.seen == []


def test_usage_is_read_from_each_protocols_answer_streamed_or_whole() -> None:
    from localagent.launch.usage_reading import AnswerFacts, EventStreamReader, read_whole_answer

    def streamed(*events: dict) -> AnswerFacts:
        facts = AnswerFacts()
        reader = EventStreamReader(facts)
        text = "".join(f"data: {json.dumps(event)}\n\n" for event in events) + "data: [DONE]\n\n"
        for start in range(0, len(text), 7):  # lines split anywhere between chunks
            reader.feed(text[start : start + 7].encode())
        reader.close()
        return facts

    anthropic = {"type": "message_start", "message": {"usage": {"input_tokens": 5, "cache_read_input_tokens": 95}}}
    assert streamed(anthropic, {"type": "message_delta", "usage": {"output_tokens": 3}}).prompt_tokens == 100
    timings = {"prompt_n": 7, "cache_n": 93, "predicted_per_second": 50.0}
    chat = streamed({"choices": [{"delta": {"content": "hi"}}]}, {"choices": [], "usage": {"prompt_tokens": 100}})
    assert chat.prompt_tokens == 100
    no_usage = streamed({"choices": [{"delta": {}, "finish_reason": "stop"}], "timings": timings})
    assert no_usage.prompt_tokens == 100 and no_usage.timings == timings  # from the timings alone
    completed = {"type": "response.completed", "response": {"usage": {"input_tokens": 100, "output_tokens": 2}}}
    assert streamed({"type": "response.created", "response": {"usage": None}}, completed).prompt_tokens == 100
    assert read_whole_answer(json.dumps({"usage": {"prompt_tokens": 100}}).encode()).prompt_tokens == 100
    assert read_whole_answer(b"not json").prompt_tokens is None


@pytest.mark.parametrize("name", ["codex", "opencode"])
def test_the_meter_answers_the_openai_protocols_in_their_own_stream_format(
    name, stand_ins, counting_server, monkeypatch, capsys
) -> None:
    monkeypatch.setenv("STANDIN_PROMPT_WORDS", "500")
    code, said = launch(capsys, name)
    assert code == 0, said
    [run] = measured_runs(stand_ins)
    assert run["text"] == "Hello."
    if name == "codex":
        assert run["types"][0] == "response.created" and run["types"][-1] == "response.completed"
        assert counting_server.seen == [("/v1/responses/input_tokens", "Bearer sekret")]
    else:
        assert counting_server.seen == [("/v1/chat/completions/input_tokens", "Bearer sekret")]
    assert f"{name} 1.0.0: its prompt takes" in said


def test_launch_options_and_the_words_after_the_dashes() -> None:
    parser = cli.build_parser()
    args = parser.parse_args(["launch", "claude", "--", "-p", "hi", "--no-check"])
    assert (args.agent, args.profile, args.no_check, args.agent_args) == (
        "claude",
        None,
        False,
        ["-p", "hi", "--no-check"],
    )
    args = cli.build_parser().parse_args(["launch", "codex", "big", "--remeasure"])
    assert (args.profile, args.remeasure, args.agent_args) == ("big", True, [])
    args = cli.build_parser().parse_args(["launch", "codex", "--remeasure", "big", "--", "exec", "hi"])
    assert (args.profile, args.remeasure, args.agent_args) == ("big", True, ["exec", "hi"])
    with pytest.raises(SystemExit):  # a second word before `--` is not the agent's: said, not dropped
        cli.build_parser().parse_args(["launch", "claude", "big", "extra"])
    with pytest.raises(SystemExit):
        cli.build_parser().parse_args(["launch", "claude", "--no-check", "--remeasure"])


def test_room_for_work_is_part_of_the_check() -> None:
    from localagent.launch.context_check import PromptFit

    assert PromptFit("claude", "2.1", 8192 - ROOM_FOR_WORK, 8192).fits
    assert not PromptFit("claude", "2.1", 8192 - ROOM_FOR_WORK + 1, 8192).fits


# -- the measuring run's place and its leftovers -------------------------------------------------


def test_the_prompt_is_measured_in_an_empty_folder_of_its_own_not_the_persons_project(
    stand_ins, counting_server, monkeypatch, capsys
) -> None:
    project = stand_ins / "project"
    project.mkdir()
    (project / "CLAUDE.md").write_text("word " * 5000)  # the project's own instructions: not the agent's prompt
    (project / ".mcp.json").write_text("{}")
    monkeypatch.chdir(project)
    code, said = launch(capsys, "claude", "tiny", "--", "hello")
    assert code == 0, said
    [run] = measured_runs(stand_ins)
    assert run["files"] == [] and Path(run["cwd"]) != project and not Path(run["cwd"]).exists()  # removed after
    assert run["prompt"] == "Say hello."
    assert report(stand_ins)["cwd"] == str(project)  # the agent itself works in the project


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def test_helpers_of_an_agent_that_ended_by_itself_are_stopped_with_it(
    stand_ins, counting_server, monkeypatch, capsys
) -> None:
    import signal
    import time

    monkeypatch.setenv("STANDIN_HELPER", "1")
    code, said = launch(capsys, "claude", "tiny")
    [run] = measured_runs(stand_ins)
    try:
        assert code == 0, said
        deadline = time.monotonic() + 5
        while _alive(run["helper"]) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(run["helper"])
    finally:
        if _alive(run["helper"]):
            os.kill(run["helper"], signal.SIGKILL)


# -- servers without llama-server's count routes ------------------------------------------------


def test_a_vllm_profile_skips_the_check_with_a_note_and_runs_the_agent(stand_ins, counting_server, capsys) -> None:
    code, said = launch(capsys, "claude", "gemma4-31b-vllm", "--", "hello")
    assert code == 0, said
    notes = [line for line in said.splitlines() if line.startswith("note:")]
    assert len(notes) == 1 and "vLLM" in notes[0] and "not checked" in notes[0]
    assert measured_runs(stand_ins) == [] and counting_server.seen == []
    assert report(stand_ins)["argv"][-1] == "hello"


def test_a_server_whose_count_route_answers_404_skips_the_check_with_a_note_and_runs_the_agent(
    stand_ins, counting_server, capsys
) -> None:
    counting_server.count_status = 404
    code, said = launch(capsys, "claude", "tiny", "--", "hello")
    assert code == 0, said
    notes = [line for line in said.splitlines() if line.startswith("note:")]
    assert len(notes) == 1 and "/v1/messages/count_tokens" in notes[0] and "404" in notes[0], said
    assert "not checked" in notes[0]
    assert report(stand_ins)["argv"][-1] == "hello"
    assert not (stand_ins / "home" / "state" / CACHE_FILE).exists()  # nothing measured, nothing kept


# -- the meter's own answers ---------------------------------------------------------------------


def raw_exchange(base_url: str, request: bytes) -> bytes:
    """Send ``request`` as it is and read the answer until the meter closes the connection."""
    import socket

    host, port = base_url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as connection:
        connection.sendall(request)
        received = []
        while data := connection.recv(65536):
            received.append(data)
    return b"".join(received)


def one_error(answer: bytes, status: int) -> str:
    """The message of the meter's only answer, which must be a one-line JSON error with ``status``."""
    assert answer.count(b"HTTP/1.1 ") == 1, answer
    assert answer.startswith(f"HTTP/1.1 {status} ".encode()), answer
    body = answer.split(b"\r\n\r\n", 1)[1]
    assert b"\n" not in body
    return json.loads(body)["error"]["message"]


def test_an_answer_the_server_cuts_short_is_one_502_not_a_200_then_a_502(capfd) -> None:
    import socketserver

    class CutShort(socketserver.StreamRequestHandler):
        def handle(self) -> None:
            while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                pass
            head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n"
            self.wfile.write(head + b'{"data": [')  # and the connection closes

    upstream = socketserver.ThreadingTCPServer(("127.0.0.1", 0), CutShort)
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    try:
        with RequestMeter(f"http://127.0.0.1:{upstream.server_address[1]}", mode="forward") as meter:
            answer = raw_exchange(meter.base_url, b"GET /v1/models HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            [recorded] = meter.requests()
    finally:
        upstream.shutdown()
        upstream.server_close()
    assert "broke off" in one_error(answer, 502)
    assert recorded.status == 502 and recorded.error
    assert "Traceback" not in capfd.readouterr().err


def test_malformed_requests_are_answered_400_in_one_line_never_a_traceback(capfd) -> None:
    counting = CountingServer()
    try:
        with RequestMeter(counting.url, mode="answer") as meter:
            bad_length = raw_exchange(
                meter.base_url,
                b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n{}",
            )
            bad_chunk = raw_exchange(
                meter.base_url,
                b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n",
            )
            body = json.dumps({"model": "m", "stream": True, "stream_options": True, "messages": []}).encode()
            bad_options = raw_exchange(
                meter.base_url,
                b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s"
                % (len(body), body),
            )
            recorded = meter.requests()
    finally:
        counting.close()
    assert "Content-Length" in one_error(bad_length, 400)
    assert "chunk" in one_error(bad_chunk, 400)
    assert "stream_options" in one_error(bad_options, 400)
    assert [r.status for r in recorded] == [400, 400, 400] and all(r.error for r in recorded)
    assert counting.seen == []  # a malformed request is not counted
    assert "Traceback" not in capfd.readouterr().err


def test_head_options_and_patch_are_forwarded(capfd) -> None:
    class Echo(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def _echo(self) -> None:
            body = json.dumps({"method": self.command, "path": self.path}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("X-Method", self.command)
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        do_HEAD = do_OPTIONS = do_PATCH = _echo

    upstream = ThreadingHTTPServer(("127.0.0.1", 0), Echo)
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    try:
        with RequestMeter(f"http://127.0.0.1:{upstream.server_address[1]}", mode="forward") as meter:
            with httpx2.Client(timeout=10) as client:
                head = client.head(f"{meter.base_url}/health")
                options = client.options(f"{meter.base_url}/v1/models")
                patch = client.patch(f"{meter.base_url}/v1/thing", json={"a": 1})
    finally:
        upstream.shutdown()
        upstream.server_close()
    assert head.status_code == 200 and head.headers["x-method"] == "HEAD" and head.content == b""
    assert options.status_code == 200 and options.json() == {"method": "OPTIONS", "path": "/v1/models"}
    assert patch.status_code == 200 and patch.json() == {"method": "PATCH", "path": "/v1/thing"}
    assert "Traceback" not in capfd.readouterr().err


# -- one rule for a profile's context per slot ---------------------------------------------------


def test_a_profiles_context_per_slot_follows_the_memory_plans_rule() -> None:
    from server.memory_plan import cache_settings
    from server.profile_loading import load_profiles

    profiles = load_profiles(
        {
            "split": {"extends": "tiny", "ctx_size": 32768, "parallel": None, "kv_unified": False},  # -np auto: 4 slots
            "auto": {"extends": "tiny", "ctx_size": 32768, "parallel": None},  # -np auto unifies the cache
            "two": {"extends": "tiny", "ctx_size": 32768, "parallel": 2},
            "unified": {"extends": "tiny", "ctx_size": 32768, "parallel": 2, "kv_unified": True},
        },
        origin="test",
    )
    assert local_server.slot_context(profiles["split"]) == 8192
    assert local_server.slot_context(profiles["two"]) == 16384
    assert local_server.slot_context(profiles["unified"]) == 32768
    assert local_server.slot_context(profiles["auto"]) == 32768
    assert local_server.slot_context(profiles["tiny"]) == 8192
    for name in ("split", "auto", "two", "unified", "tiny"):
        cache = cache_settings(profiles[name])
        assert local_server.slot_context(profiles[name]) == (
            cache.n_ctx if cache.unified else cache.n_ctx // cache.n_seq
        )
    assert local_server.slot_context(profiles["gemma4-31b-vllm"]) == 32768  # vLLM: one request may fill it


# -- the context bill ----------------------------------------------------------------------------


def _context_bill():
    import importlib.util

    path = Path(__file__).parent.parent / "scripts" / "context_bill.py"
    spec = importlib.util.spec_from_file_location("context_bill", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_the_bills_first_request_is_the_first_sent_that_carries_tools() -> None:
    from localagent.launch.request_meter import MeteredRequest

    bill = _context_bill()

    def request(started: float, tools: bool, tokens: int) -> MeteredRequest:
        return MeteredRequest("POST", "/v1/messages", "anthropic", 200, True, tools, tokens, None, started, 1.0)

    # In the order the answers finished: a short side request (a title) ends before the real turn.
    finished = [request(2.0, False, 50), request(1.0, True, 18_000), request(3.0, True, 18_500)]
    assert bill._bill("claude", "2.1", finished, 32768, 1.0, 0, "").first_prompt_tokens == 18_000
    side_first = [request(1.0, False, 40), request(2.0, True, 17_000)]
    assert bill._bill("claude", "2.1", side_first, 32768, 1.0, 0, "").first_prompt_tokens == 17_000
    no_tools = [request(2.0, False, 70), request(1.0, False, 60)]
    assert bill._bill("localagent", "1", no_tools, 32768, 1.0, 0, "").first_prompt_tokens == 60


@pytest.mark.parametrize("name", ["codex", "opencode"])
def test_the_bill_measures_every_agent_on_the_task_in_a_fresh_workspace(
    name, stand_ins, counting_server, monkeypatch
) -> None:
    bill = _context_bill()
    server = LocalServer("tiny", counting_server.url, "sekret", "tiny-model", 8192, "tiny")
    monkeypatch.chdir(stand_ins)
    got = bill.measure(name, server, "Read calc.py and fix it.", 60.0)
    [run] = measured_runs(stand_ins)
    assert run["prompt"] == "Read calc.py and fix it."
    assert "calc.py" in run["files"] and Path(run["cwd"]) != stand_ins
    assert got.first_prompt_tokens and got.first_prompt_tokens > 0


def test_measure_prompt_takes_a_folder_and_a_prompt(stand_ins, counting_server) -> None:
    from localagent.launch.prompt_measure import measure_prompt
    from tools.program_path import which_absolute

    workspace = stand_ins / "workspace"
    workspace.mkdir()
    (workspace / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    server = LocalServer("tiny", counting_server.url, "sekret", "tiny-model", 8192, "tiny")
    program = which_absolute("claude")
    assert program
    tokens = measure_prompt(AGENTS["claude"], program, server, cwd=workspace, prompt="Add a docstring.")
    [run] = measured_runs(stand_ins)
    assert run["cwd"] == str(workspace) and run["files"] == ["calc.py"] and run["prompt"] == "Add a docstring."
    assert tokens > 200
    assert workspace.exists()  # a folder the caller gave stays


# -- the real llama-server ---------------------------------------------------------------------

CLAUDE_SHAPED = {
    "model": "tiny",
    "max_tokens": 8,
    "stream": True,
    "system": [
        {"type": "text", "text": "You are Claude Code, a coding agent."},
        {"type": "text", "text": "Use the tools to look at files before you change them."},
    ],
    "tools": [
        {
            "name": "Bash",
            "description": "Run a shell command",
            "input_schema": {
                "type": "object",
                "properties": {"command": {"type": "string"}},
                "required": ["command"],
            },
        },
        {
            "name": "Read",
            "description": "Read a file",
            "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
        },
    ],
    "messages": [{"role": "user", "content": [{"type": "text", "text": "List the files."}]}],
}


def test_the_meter_forwards_a_claude_code_request_to_the_real_server_and_records_its_prompt(
    llama_server_binary: Path, tiny_gguf: Path, tmp_path: Path
) -> None:
    flags = ["--jinja", "--chat-template-file", str(CHATML_TOOLS_TEMPLATE), "-c", "4096", "-np", "1", "-t", "2"]
    with running_llama_server(llama_server_binary, tiny_gguf, [*flags, "--no-warmup"], tmp_path / "log") as url:
        counted = httpx2.post(f"{url}/v1/messages/count_tokens", json=CLAUDE_SHAPED, timeout=60).json()
        with RequestMeter(url, mode="forward") as meter:
            with httpx2.stream(
                "POST", f"{meter.base_url}/v1/messages?beta=true", json=CLAUDE_SHAPED, timeout=120
            ) as answer:
                assert answer.status_code == 200
                assert answer.headers["content-type"].startswith("text/event-stream")
                stream = answer.read().decode()
            [recorded] = meter.requests()
    events = [line.split(":", 1)[1].strip() for line in stream.splitlines() if line.startswith("event:")]
    datas = [json.loads(line[5:]) for line in stream.splitlines() if line.startswith("data:")]
    assert events[0] == "message_start" and events[-2:] == ["message_delta", "message_stop"]
    assert [data["type"] for data in datas] == events
    assert datas[0]["message"]["role"] == "assistant"
    assert recorded.path == "/v1/messages?beta=true" and recorded.protocol == "anthropic"
    assert recorded.stream and recorded.has_tools and recorded.status == 200 and recorded.error is None
    assert recorded.prompt_tokens == counted["input_tokens"] > 50


def test_launch_on_the_real_tiny_profile_refuses_a_large_prompt_and_runs_a_small_one(
    la_env, llama_server_binary: Path, stand_ins: Path
) -> None:
    env = dict(la_env.env, PATH=os.environ["PATH"], STANDIN_LOG=os.environ["STANDIN_LOG"])
    env["STANDIN_REPORT"] = os.environ["STANDIN_REPORT"]

    def run(*words: str, **extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "localagent.cli", "launch", *words],
            capture_output=True,
            text=True,
            env=env | extra,
            cwd=la_env.workspace,
            timeout=240,
        )

    # 12,000 words overflow the tiny profile's 8k context in any tokenizer's count.
    refused = run("claude", "tiny", STANDIN_PROMPT_WORDS="12000")
    assert refused.returncode == 2, refused.stderr
    found = re.search(r"claude's own prompt is ([\d,]+) tokens; profile tiny holds 8,192 per slot", refused.stderr)
    assert found and int(found.group(1).replace(",", "")) > 12_000, refused.stderr
    assert not (stand_ins / "report.json").exists()

    ran = run("claude", "tiny", "--", "--resume", STANDIN_PROMPT_WORDS="500", STANDIN_VERSION="2.0.0")
    assert ran.returncode == 0, ran.stderr
    assert "claude 2.0.0: its prompt takes" in ran.stderr and "of 8,192 tokens" in ran.stderr
    got = report(stand_ins)
    assert got["env"]["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:8910"  # the managed server itself
    assert got["argv"][-1] == "--resume"
    assert [run["text"] for run in measured_runs(stand_ins)] == ["Hello.", "Hello."]


def test_the_advice_names_a_profile_that_holds_the_prompt_or_the_server_in_the_way() -> None:
    from localagent.launch.context_check import ContextTooSmall, PromptFit, require_fit
    from server.profile_loading import load_profiles

    profiles = load_profiles({"tiny32k": {"extends": "tiny", "ctx_size": 32768}}, origin="test")
    fit = PromptFit("claude", "2.1", 9_812, 8_192)
    with pytest.raises(ContextTooSmall) as own:
        require_fit(fit, "tiny", "tiny", profiles)
    assert str(own.value).endswith("Use a profile with a larger context (tiny32k: 32,768).")  # same model first
    with pytest.raises(ContextTooSmall) as attached:
        require_fit(fit, "tiny32k", "tiny", profiles)  # tiny32k attached to tiny's server (same model)
    assert "the running server (profile tiny) holds 8,192 per slot" in str(attached.value)
    assert str(attached.value).endswith(
        "Stop that server (localagent server stop) so that profile tiny32k starts its own."
    )
    with pytest.raises(ContextTooSmall) as nothing:
        require_fit(PromptFit("claude", "2.1", 90_000, 8_192), "tiny", "tiny", profiles)
    assert str(nothing.value).endswith("No known profile holds 94,096; raise ctx_size in a profile of your own.")
