"""The bash tool against real processes."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest

from tests.support.process_probe import host_pids, unique_seconds, wait_until_gone
from tools import BashTool, ToolContext
from tools.output_truncation import MAX_OUTPUT_CHARS


@pytest.fixture
def ctx(tmp_path: Path, sandbox_layer: str) -> ToolContext:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    return ToolContext(workspace=workspace, scratch_dir=tmp_path / "scratch")


async def wait_for_file(path: Path, seconds: float = 5.0) -> None:
    deadline = time.monotonic() + seconds
    while not (path.exists() and path.read_text().strip()):
        assert time.monotonic() < deadline, f"{path} never appeared"
        await asyncio.sleep(0.02)


async def test_runs_in_workspace_and_reports_exit_code(ctx: ToolContext) -> None:
    result = await BashTool().run({"command": "pwd; echo oops >&2; exit 3"}, ctx)
    assert result.is_error
    assert result.metadata["exit_code"] == 3
    assert str(ctx.workspace) in result.output
    assert "oops" in result.output
    assert "[exit code: 3]" in result.output


async def test_success_is_not_an_error(ctx: ToolContext) -> None:
    result = await BashTool().run({"command": "echo hello"}, ctx)
    assert not result.is_error
    assert result.output == "hello\n[exit code: 0]"
    assert result.metadata["full_output_path"] is None


async def test_stdin_is_empty(ctx: ToolContext) -> None:
    result = await BashTool().run({"command": "cat; echo done"}, ctx)
    assert result.output.startswith("done")


async def test_no_output_is_said(ctx: ToolContext) -> None:
    result = await BashTool().run({"command": "true"}, ctx)
    assert "(no output)" in result.output


async def test_timeout_kills_whole_process_group(ctx: ToolContext) -> None:
    marker = unique_seconds()
    started = time.monotonic()
    result = await BashTool().run({"command": f"sleep {marker} & sleep 100", "timeout": 0.5}, ctx)
    assert time.monotonic() - started < 10
    assert result.is_error
    assert result.metadata["timed_out"] is True
    assert "timed out after 0.5 s" in result.output
    assert wait_until_gone(marker), "background child survived the timeout"


async def test_timeout_kills_children_that_ignore_sigterm(ctx: ToolContext) -> None:
    marker = unique_seconds()
    command = f"(trap '' TERM; sleep {marker}) & wait"
    result = await BashTool().run({"command": command, "timeout": 0.5}, ctx)
    assert result.metadata["timed_out"]
    assert wait_until_gone(marker)


async def test_background_job_holding_output_does_not_block(ctx: ToolContext) -> None:
    marker = unique_seconds()
    started = time.monotonic()
    result = await BashTool().run({"command": f"echo hi; sleep {marker} &"}, ctx)
    assert time.monotonic() - started < 10
    assert "hi" in result.output
    assert result.metadata["exit_code"] == 0
    for pid in host_pids(marker):
        os.kill(pid, 9)


async def test_long_output_keeps_head_and_tail_and_saves_all(ctx: ToolContext) -> None:
    result = await BashTool().run({"command": "seq 1 100000"}, ctx)
    assert not result.is_error
    lines = result.output.splitlines()
    assert lines[0] == "1"
    assert lines[-2] == "100000"
    assert len(result.output) <= MAX_OUTPUT_CHARS + 1000
    marker = next(line for line in lines if "cut from the middle" in line)
    saved = Path(result.metadata["full_output_path"])
    assert str(saved) in marker
    assert saved.parent == ctx.scratch_dir
    expected = "".join(f"{n}\n" for n in range(1, 100001))
    assert saved.read_text() == expected
    shown_numbers = [line for line in lines if line.isdigit()]
    cut_lines = int(marker.split("[... ")[1].split(" lines")[0])
    assert cut_lines + len(shown_numbers) == 100000


async def test_many_short_lines_are_cut_by_line_count(ctx: ToolContext) -> None:
    result = await BashTool().run({"command": "seq 1 1000"}, ctx)
    assert "cut from the middle" in result.output
    assert len(result.output.splitlines()) < 420
    assert Path(result.metadata["full_output_path"]).read_text().count("\n") == 1000


async def test_short_output_leaves_no_spool_file(ctx: ToolContext) -> None:
    await BashTool().run({"command": "echo small"}, ctx)
    assert not ctx.scratch_dir.exists() or list(ctx.scratch_dir.iterdir()) == []


async def test_secret_env_vars_are_filtered(ctx: ToolContext, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FOO_TOKEN", "tok-123")
    monkeypatch.setenv("my_api_key", "key-456")
    monkeypatch.setenv("DB_PASSWORD", "pw")
    monkeypatch.setenv("PLAIN_SETTING", "visible")
    result = await BashTool().run({"command": "env"}, ctx)
    assert "FOO_TOKEN" not in result.output
    assert "tok-123" not in result.output
    assert "key-456" not in result.output
    assert "DB_PASSWORD" not in result.output
    assert "PLAIN_SETTING=visible" in result.output


async def test_env_allow_lets_a_named_variable_through(ctx: ToolContext, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FOO_TOKEN", "tok-123")
    ctx.env_allow = {"FOO_TOKEN"}
    result = await BashTool().run({"command": "env"}, ctx)
    assert "FOO_TOKEN=tok-123" in result.output


async def test_cancellation_kills_the_process_group(ctx: ToolContext) -> None:
    pid_file = ctx.workspace / "child.pid"
    marker = unique_seconds()
    task = asyncio.create_task(BashTool().run({"command": f"sleep {marker} & echo $! > {pid_file}; sleep 100"}, ctx))
    await wait_for_file(pid_file)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert wait_until_gone(marker), "child survived cancellation"


async def test_cancelled_while_bash_is_starting_kills_what_it_already_started(
    ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    # asyncio forks the shell before it has wired up the output pipe. Hold the wiring until the
    # shell has put a job in the background, cancel in that window, then let the wiring finish:
    # the job must die with the shell, not outlive the cancelled call.
    loop = asyncio.get_running_loop()
    wire_pipe = loop.connect_read_pipe
    released = asyncio.Event()

    async def held_until_released(*args, **kwargs):
        await released.wait()
        return await wire_pipe(*args, **kwargs)

    monkeypatch.setattr(loop, "connect_read_pipe", held_until_released)
    pid_file = ctx.workspace / "child.pid"
    marker = unique_seconds()
    task = asyncio.create_task(BashTool().run({"command": f"sleep {marker} & echo $! > {pid_file}; sleep 1000"}, ctx))
    await wait_for_file(pid_file)
    try:
        task.cancel()
        await asyncio.sleep(0.2)
        released.set()
        done, _ = await asyncio.wait({task}, timeout=30)
        assert task in done, "the cancelled call waits for the background job to end"
        assert task.cancelled()
        assert wait_until_gone(marker), "the background job outlived the cancelled call"
    finally:
        for pid in host_pids(marker):
            os.kill(pid, 9)


async def test_default_timeout_comes_from_context(ctx: ToolContext) -> None:
    ctx.bash_default_timeout = 0.3
    result = await BashTool().run({"command": "sleep 5"}, ctx)
    assert result.metadata["timed_out"]


async def test_bad_arguments_are_errors_not_exceptions(ctx: ToolContext) -> None:
    tool = BashTool()
    missing = await tool.run({}, ctx)
    assert missing.is_error and "missing required argument 'command'" in missing.output
    too_long = await tool.run({"command": "true", "timeout": 9999}, ctx)
    assert too_long.is_error and "timeout" in too_long.output
    wrong_type = await tool.run({"command": 5}, ctx)
    assert wrong_type.is_error and "must be of type string" in wrong_type.output


def test_describe_call_is_the_command() -> None:
    assert BashTool().describe_call({"command": "ls -la"}) == "ls -la"
    assert BashTool().describe_call({}) == ""
