"""The ripgrep child process: where rg is found, its deadline, and that it never outlives its task."""

from __future__ import annotations

import asyncio
import os
import stat
import time
from pathlib import Path

import pytest

from tools import GrepTool, ToolContext
from tools.ripgrep_binary import find_rg
from tools.ripgrep_process import collect_records, run_rg

# Stands in for rg: records its pid and a child's, then hangs. A pattern check ends in "-"
# (empty stdin) and is answered at once, so the grep tool gets as far as the search.
HANGING_RG = """#!/bin/sh
for last in "$@"; do :; done
if [ "$last" = "-" ]; then exit 1; fi
sleep 300 &
echo "$$ $!" > "{pids}"
wait
"""


@pytest.fixture
def hanging_rg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Make every rg run start the hanging stand-in; returns the file it writes its pids to."""
    pids = tmp_path / "pids"
    script = tmp_path / "fake-rg"
    script.write_text(HANGING_RG.format(pids=pids))
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setattr("tools.ripgrep_process.find_rg", lambda: script)
    return pids


async def started_pids(pids_file: Path) -> list[int]:
    for _ in range(1000):
        if pids_file.exists() and len(pids_file.read_text().split()) == 2:
            return [int(pid) for pid in pids_file.read_text().split()]
        await asyncio.sleep(0.01)
    raise AssertionError("the stand-in rg never started")


def is_running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        # A zombie has exited; it only waits for its parent (or init) to collect it.
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    except (OSError, IndexError):
        return False


async def assert_all_gone(pids: list[int]) -> None:
    deadline = time.monotonic() + 5
    while any(is_running(pid) for pid in pids) and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    assert not [pid for pid in pids if is_running(pid)], "rg or its child outlived the search"


def test_finds_the_rg_that_the_ripgrep_wheel_installed() -> None:
    found = find_rg()
    assert found.name == "rg" and os.access(found, os.X_OK)


async def test_collects_records(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("x\n")
    (tmp_path / "b.txt").write_text("y\n")
    records, run = await collect_records(["--files", "--null", "--sort=path", "."], tmp_path, 10, b"\0")
    assert records == [b"./a.txt", b"./b.txt"]
    assert run.returncode == 0 and not run.timed_out


async def test_handler_can_stop_rg_early(tmp_path: Path) -> None:
    (tmp_path / "many.txt").write_text("hit\n" * 100_000)
    seen: list[bytes] = []

    def first_three(record: bytes) -> bool:
        seen.append(record)
        return len(seen) < 3

    run = await run_rg(["--regexp", "hit", "many.txt"], tmp_path, 10, first_three)
    assert run.stopped_early and len(seen) == 3


async def test_timeout_kills_the_whole_process_group(tmp_path: Path, hanging_rg: Path) -> None:
    task = asyncio.create_task(run_rg(["--files", "."], tmp_path, 3, lambda _: True))
    pids = await started_pids(hanging_rg)
    run = await task
    assert run.timed_out
    await assert_all_gone(pids)


async def test_cancelling_the_task_kills_rg(tmp_path: Path, hanging_rg: Path) -> None:
    task = asyncio.create_task(run_rg(["--files", "."], tmp_path, 60, lambda _: True))
    pids = await started_pids(hanging_rg)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await assert_all_gone(pids)


async def test_grep_stops_at_its_time_limit_and_says_so(tmp_path: Path, hanging_rg: Path) -> None:
    ctx = ToolContext(workspace=tmp_path, scratch_dir=tmp_path / "scratch")
    (tmp_path / "a.txt").write_text("x\n")
    task = asyncio.create_task(GrepTool(timeout_seconds=3).run({"pattern": "x", "path": "a.txt"}, ctx))
    pids = await started_pids(hanging_rg)
    result = await task
    assert result.is_error
    assert "stopped after 3 s" in result.output
    assert result.metadata["timed_out"]
    await assert_all_gone(pids)


async def test_cancelling_grep_kills_rg(tmp_path: Path, hanging_rg: Path) -> None:
    # What Ctrl-C or a run's --timeout does to the tool call in progress.
    ctx = ToolContext(workspace=tmp_path, scratch_dir=tmp_path / "scratch")
    (tmp_path / "a.txt").write_text("x\n")
    task = asyncio.create_task(GrepTool().run({"pattern": "x", "path": "a.txt"}, ctx))
    pids = await started_pids(hanging_rg)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await assert_all_gone(pids)


async def test_a_users_ripgrep_config_is_ignored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "rgrc"
    config.write_text("--glob=!*.py\n--max-count=0\n")
    monkeypatch.setenv("RIPGREP_CONFIG_PATH", str(config))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "a.py").write_text("needle\n")
    ctx = ToolContext(workspace=workspace, scratch_dir=tmp_path / "scratch")
    result = await GrepTool().run({"pattern": "needle"}, ctx)
    assert result.output == "a.py:1:needle"
