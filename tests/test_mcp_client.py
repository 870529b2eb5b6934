"""The MCP client against real servers (tests/mcp_servers/echo_server.py) over stdio and HTTP."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tools.base import ToolContext
from tools.mcp import McpManager, ServerConfig, load_config_file

ECHO_SERVER = Path(__file__).parent / "mcp_servers" / "echo_server.py"
ECHO_TOOLS = {"echo", "fail", "sleep", "huge", "crash", "env", "header", "mixed", "plan_trip"}


def stdio(name: str = "echo", **overrides) -> ServerConfig:
    fields = {"command": sys.executable, "args": [str(ECHO_SERVER)]}
    fields.update(overrides)
    return ServerConfig(name=name, transport="stdio", source="cli", origin=Path("test.json"), **fields)


def http(port: int, name: str = "web", **overrides) -> ServerConfig:
    url = f"http://127.0.0.1:{port}/mcp"
    return ServerConfig(name=name, transport="http", source="cli", origin=Path("test.json"), url=url, **overrides)


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(workspace=tmp_path, scratch_dir=tmp_path / "scratch")


def manager(tmp_path: Path, *configs: ServerConfig) -> McpManager:
    return McpManager(list(configs), tmp_path / "logs", tmp_path / "scratch")


async def call(mcp: McpManager, tool_name: str, ctx: ToolContext, **args):
    tool = next(t for t in mcp.tools() if t.name == tool_name)
    return await tool.run(args, ctx)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class HttpEchoServer:
    def __init__(self, port: int, log: Path, transport: str = "http") -> None:
        self.port = port
        self.log = log
        self.transport = transport
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, str(ECHO_SERVER), self.transport, str(self.port)], stdout=log, stderr=log
            )
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                assert self.proc.poll() is None, self.log.read_text()
                time.sleep(0.05)
        raise AssertionError("the HTTP echo server did not start")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
        if self.proc is not None:
            self.proc.wait()


@pytest.fixture
def http_server(tmp_path: Path) -> Iterator[HttpEchoServer]:
    server = HttpEchoServer(free_port(), tmp_path / "http-server.log")
    server.start()
    yield server
    server.stop()


# -- stdio --------------------------------------------------------------------------------------


async def test_stdio_lists_calls_reports_tool_errors_and_logs_stderr(tmp_path, ctx):
    async with manager(tmp_path, stdio(env={"GREETING": "hi there"})) as mcp:
        (state,) = mcp.states()
        assert (state.state, state.transport, state.error) == ("ready", "stdio", None)
        assert state.tool_count == len(ECHO_TOOLS)
        tools = {t.name: t for t in mcp.tools()}
        assert set(tools) == {f"mcp__echo__{name}" for name in ECHO_TOOLS}
        echo = tools["mcp__echo__echo"]
        assert echo.description == "Return the text unchanged."
        assert echo.parameters["properties"]["text"]["type"] == "string" and echo.parameters["required"] == ["text"]
        assert echo.reads_only is False
        assert echo.describe_call({"text": "hi"}) == '{"text":"hi"}'

        result = await call(mcp, "mcp__echo__echo", ctx, text="hello")
        assert (result.output, result.is_error) == ("hello", False)

        failed = await call(mcp, "mcp__echo__fail", ctx, message="the disk is full")
        assert failed.is_error and "the disk is full" in failed.output

        mixed = await call(mcp, "mcp__echo__mixed", ctx)
        assert mixed.output.splitlines() == [
            "some text",
            "[image: image/png, 67 bytes]",
            "[resource: file:///notes.txt, text/plain, 5 characters]",
        ]
        # Configured variables reach the child; the parent's secrets do not.
        assert (await call(mcp, "mcp__echo__env", ctx, name="GREETING")).output == "hi there"
    log = (tmp_path / "logs" / "echo.log").read_text()
    assert "echo server starting (stdio)" in log


async def test_env_expansion_from_a_config_file_reaches_the_server(tmp_path, ctx, monkeypatch):
    monkeypatch.setenv("LA_TEST_SECRET_TOKEN", "not-for-children")
    monkeypatch.setenv("LA_TEST_PLACE", "Gdansk")
    config = tmp_path / "mcp.json"
    config.write_text(
        '{"mcpServers": {"echo": {"command": "${LA_TEST_PYTHON:-%s}", "args": ["%s"],'
        ' "env": {"PLACE": "${LA_TEST_PLACE}", "MOOD": "${LA_TEST_MOOD:-calm}"}}}}' % (sys.executable, ECHO_SERVER)
    )
    loaded = load_config_file(config, "user")
    assert loaded.problems == []
    async with manager(tmp_path, *loaded.servers) as mcp:
        assert (await call(mcp, "mcp__echo__env", ctx, name="PLACE")).output == "Gdansk"
        assert (await call(mcp, "mcp__echo__env", ctx, name="MOOD")).output == "calm"
        assert (await call(mcp, "mcp__echo__env", ctx, name="LA_TEST_SECRET_TOKEN")).output == "<unset>"


async def test_a_call_past_its_timeout_is_an_error_and_the_server_keeps_serving(tmp_path, ctx):
    async with manager(tmp_path, stdio(call_timeout=1)) as mcp:
        started = time.monotonic()
        slow = await call(mcp, "mcp__echo__sleep", ctx, seconds=30)
        assert slow.is_error and "did not answer within 1 s" in slow.output
        assert time.monotonic() - started < 5
        assert (await call(mcp, "mcp__echo__echo", ctx, text="still here")).output == "still here"
        assert mcp.states()[0].state == "ready"


async def test_a_crash_fails_the_call_in_flight_and_the_next_call_reconnects(tmp_path, ctx):
    async with manager(tmp_path, stdio()) as mcp:
        crashed = await call(mcp, "mcp__echo__crash", ctx)
        assert crashed.is_error and "stopped during the call" in crashed.output
        (state,) = mcp.states()
        assert state.state == "disconnected" and state.error
        again = await call(mcp, "mcp__echo__echo", ctx, text="back")
        assert (again.output, again.is_error) == ("back", False)
        assert mcp.states()[0].state == "ready"


async def test_huge_output_is_capped_and_saved_whole(tmp_path, ctx):
    async with manager(tmp_path, stdio()) as mcp:
        result = await call(mcp, "mcp__echo__huge", ctx, n=200_000)
    saved = Path(result.metadata["full_output"])
    assert len(saved.read_text()) == 200_000 and saved.parent == tmp_path / "scratch"
    assert len(result.output) < 35_000 and str(saved) in result.output and not result.is_error


async def test_servers_that_fail_to_start_are_reported_and_skipped(tmp_path, ctx):
    complain = "import sys; print('no API key given', file=sys.stderr); sys.exit(3)"
    dies = stdio("dies", command=sys.executable, args=["-c", complain])
    hangs = stdio("hangs", command=sys.executable, args=["-c", "import time; time.sleep(60)"], startup_timeout=1)
    missing = stdio("missing", command="no-such-mcp-server-command")
    refused = http(free_port(), name="refused")
    started = time.monotonic()
    async with manager(tmp_path, dies, hangs, missing, refused, stdio()) as mcp:
        assert time.monotonic() - started < 15
        states = {s.name: s for s in mcp.states()}
        assert states["echo"].state == "ready"
        assert {name for name, s in states.items() if s.state == "failed"} == {"dies", "hangs", "missing", "refused"}
        assert "no API key given" in states["dies"].error
        assert str(tmp_path / "logs" / "dies.log") in states["dies"].error
        assert "did not start within 1 s" in states["hangs"].error
        assert "command not found: no-such-mcp-server-command" in states["missing"].error
        assert "cannot connect" in states["refused"].error
        assert all("\n" not in s.error for s in states.values() if s.error)
        assert {t.name.split("__")[1] for t in mcp.tools()} == {"echo"}
        assert len(mcp.problems()) == 4
        assert (await call(mcp, "mcp__echo__echo", ctx, text="ok")).output == "ok"


async def test_arguments_a_tool_cannot_run_are_refused_before_they_reach_the_server(tmp_path, ctx, monkeypatch):
    async with manager(tmp_path, stdio()) as mcp:
        (connection,) = {t.connection for t in mcp.tools()}
        sent: list[tuple[str, dict]] = []
        forward = connection.call

        async def recording_call(tool: str, arguments: dict):
            sent.append((tool, arguments))
            return await forward(tool, arguments)

        monkeypatch.setattr(connection, "call", recording_call)
        refused = {
            ("mcp__echo__echo", "text", 5): "invalid arguments for mcp__echo__echo: "
            "argument 'text' must be of type string, got 5 (integer)",
            ("mcp__echo__echo", "bogus", 1): "invalid arguments for mcp__echo__echo: missing required argument 'text'",
            # An unpaired surrogate fits the schema, but the transport cannot encode it: sent, it
            # broke the connection. NaN fits too, and would arrive as null.
            ("mcp__echo__echo", "text", "\ud800"): "argument 'text' contains an unpaired surrogate "
            "(invalid Unicode); send valid UTF-8 text",
            ("mcp__echo__sleep", "seconds", float("nan")): "argument 'seconds' is nan, "
            "which is not a number JSON allows; send a finite number",
        }
        for (tool, key, value), message in refused.items():
            result = await call(mcp, tool, ctx, **{key: value})
            assert (result.output, result.is_error) == (message, True)
        # Nested models behind $ref are checked against the server's own schema.
        trip = await call(mcp, "mcp__echo__plan_trip", ctx, stops=[{"city": "Gdansk"}], options={"travel_mode": "jet"})
        assert trip.is_error and "options.travel_mode" in trip.output and "\n" not in trip.output
        assert sent == []

        assert (await call(mcp, "mcp__echo__echo", ctx, text="fine")).output == "fine"
        assert sent == [("echo", {"text": "fine"})]
        assert mcp.states()[0].state == "ready"
    assert (tmp_path / "logs" / "echo.log").read_text().count("echo server starting") == 1


# -- streamable HTTP ----------------------------------------------------------------------------


async def test_http_lists_calls_sends_expanded_headers_and_reports_tool_errors(tmp_path, ctx, http_server):
    entry = {
        "type": "http",
        "url": "http://127.0.0.1:${LA_TEST_PORT}/mcp",
        "headers": {"Authorization": "Bearer ${LA_TEST_TOKEN}"},
    }
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"web": entry}}))
    loaded = load_config_file(path, "user", environ={"LA_TEST_PORT": str(http_server.port), "LA_TEST_TOKEN": "t0k3n"})
    async with manager(tmp_path, *loaded.servers) as mcp:
        (state,) = mcp.states()
        assert (state.state, state.transport, state.tool_count) == ("ready", "http", len(ECHO_TOOLS))
        assert (await call(mcp, "mcp__web__header", ctx, name="Authorization")).output == "Bearer t0k3n"
        assert (await call(mcp, "mcp__web__echo", ctx, text="over http")).output == "over http"
        failed = await call(mcp, "mcp__web__fail", ctx, message="remote trouble")
        assert failed.is_error and "remote trouble" in failed.output


async def test_sse_lists_and_calls(tmp_path, ctx):
    server = HttpEchoServer(free_port(), tmp_path / "sse-server.log", transport="sse")
    server.start()
    try:
        config = ServerConfig(
            name="old", transport="sse", source="cli", origin=Path("t.json"), url=f"http://127.0.0.1:{server.port}/sse"
        )
        async with manager(tmp_path, config) as mcp:
            assert mcp.states()[0].state == "ready" and len(mcp.tools()) == len(ECHO_TOOLS)
            assert (await call(mcp, "mcp__old__echo", ctx, text="over sse")).output == "over sse"
    finally:
        server.stop()


async def test_http_timeout_crash_and_reconnect(tmp_path, ctx, http_server):
    async with manager(tmp_path, http(http_server.port, call_timeout=1)) as mcp:
        slow = await call(mcp, "mcp__web__sleep", ctx, seconds=30)
        assert slow.is_error and "did not answer within 1 s" in slow.output
        crashed = await call(mcp, "mcp__web__crash", ctx)
        assert crashed.is_error and "stopped during the call" in crashed.output
        assert mcp.states()[0].state == "disconnected"
        http_server.stop()
        http_server.start()
        assert (await call(mcp, "mcp__web__echo", ctx, text="again")).output == "again"
        assert mcp.states()[0].state == "ready"

        # Gone for good: one reconnect attempt, then the server stays failed.
        http_server.stop()
        first = await call(mcp, "mcp__web__echo", ctx, text="x")
        second = await call(mcp, "mcp__web__echo", ctx, text="x")
        third = await call(mcp, "mcp__web__echo", ctx, text="x")
        assert first.is_error and second.is_error and third.is_error
        assert "could not be restarted" in second.output
        assert mcp.states()[0].state == "failed"


async def test_closing_stops_every_stdio_server(tmp_path):
    async with manager(tmp_path, stdio("one"), stdio("two")) as mcp:
        assert [s.state for s in mcp.states()] == ["ready", "ready"]
        assert len(echo_children()) == 2
    assert echo_children() == []


def echo_children() -> list[int]:
    """Live (not zombie) echo servers whose parent is this test process."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            cmdline = (stat.parent / "cmdline").read_bytes()
        except OSError:
            continue
        if fields[1] == str(os.getpid()) and fields[0] != "Z" and ECHO_SERVER.name.encode() in cmdline:
            found.append(int(stat.parent.name))
    return found


async def test_a_cancelled_call_does_not_hold_up_the_next_one(tmp_path, ctx):
    async with manager(tmp_path, stdio()) as mcp:
        slow = asyncio.create_task(call(mcp, "mcp__echo__sleep", ctx, seconds=30))
        await asyncio.sleep(0.5)
        slow.cancel()
        with pytest.raises(asyncio.CancelledError):
            await slow
        started = time.monotonic()
        assert (await call(mcp, "mcp__echo__echo", ctx, text="next")).output == "next"
        assert time.monotonic() - started < 5
        assert mcp.states()[0].state == "ready"
