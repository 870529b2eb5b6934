"""Run ripgrep as a child process that cannot outlive its deadline or the task awaiting it."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from tools.base import ToolError
from tools.process_group import signal_group
from tools.ripgrep_binary import find_rg

READ_CHUNK_BYTES = 64 * 1024
# rg writes one short line per unreadable file; a flood of them says nothing more.
MAX_STDERR_BYTES = 64 * 1024
PROBE_TIMEOUT_SECONDS = 10.0

# Called with each output record (a JSON line, or a path for --files -0); False stops rg.
RecordHandler = Callable[[bytes], bool]


@dataclass(frozen=True)
class RgRun:
    returncode: int | None
    stderr: str
    timed_out: bool = False
    stopped_early: bool = False


async def run_rg(
    args: Sequence[str],
    cwd: Path,
    timeout: float,
    on_record: RecordHandler,
    separator: bytes = b"\n",
) -> RgRun:
    """Run `rg --no-config ARGS` in `cwd`, feeding `on_record` until it ends or `timeout` passes.

    rg runs in its own process group, which is killed on timeout, on an early stop, and when
    the awaiting task is cancelled (Ctrl-C, a run timeout): a search never lives on unseen.
    """
    process = await _spawn(find_rg(), args, cwd)
    assert process.stdout is not None and process.stderr is not None
    stderr_task = asyncio.create_task(_read_capped(process.stderr, MAX_STDERR_BYTES))
    timed_out = stopped_early = False
    try:
        try:
            async with asyncio.timeout(timeout):
                if not await _pump(process.stdout, separator, on_record):
                    stopped_early = True
                    _kill(process)
                await process.wait()
        except TimeoutError:
            timed_out = True
            _kill(process)
            await process.wait()
        stderr = await stderr_task
    except BaseException:
        _kill(process)
        stderr_task.cancel()
        raise
    return RgRun(process.returncode, stderr.decode("utf-8", "replace"), timed_out, stopped_early)


async def _spawn(binary: Path, args: Sequence[str], cwd: Path) -> asyncio.subprocess.Process:
    spawning = asyncio.create_task(
        asyncio.create_subprocess_exec(
            str(binary),
            # A user's RIPGREP_CONFIG_PATH must not change what the tools see.
            "--no-config",
            *args,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=_rg_environment(),
            start_new_session=True,
        )
    )
    try:
        # Shielded: cancelled mid-start, asyncio would kill only rg itself and then wait for
        # its pipes to close, which anything rg started could hold open indefinitely.
        return await asyncio.shield(spawning)
    except asyncio.CancelledError:
        spawning.add_done_callback(_kill_once_started)
        raise
    except OSError as exc:
        raise ToolError(f"could not start ripgrep ({binary}): {exc.strerror or exc}") from exc


def _kill_once_started(spawning: asyncio.Task[asyncio.subprocess.Process]) -> None:
    if not spawning.cancelled() and spawning.exception() is None:
        _kill(spawning.result())


async def collect_records(
    args: Sequence[str], cwd: Path, timeout: float, separator: bytes
) -> tuple[list[bytes], RgRun]:
    """Every output record of an rg run, for output that is needed whole (a file list)."""
    records: list[bytes] = []

    def keep(record: bytes) -> bool:
        records.append(record)
        return True

    run = await run_rg(args, cwd, timeout, keep, separator)
    return records, run


_pcre2_support: dict[Path, bool] = {}


async def has_pcre2() -> bool:
    """Whether this rg was built with PCRE2 (lookaround, backreferences); asked once."""
    binary = find_rg()
    if binary not in _pcre2_support:
        run = await run_rg(["--pcre2-version"], binary.parent, PROBE_TIMEOUT_SECONDS, lambda _: True)
        _pcre2_support[binary] = run.returncode == 0
    return _pcre2_support[binary]


async def _pump(stream: asyncio.StreamReader, separator: bytes, on_record: RecordHandler) -> bool:
    """Split the stream into records; False as soon as the handler asks to stop."""
    # Pieces of the record still unterminated; joined once, so a huge line costs linear time.
    pending: list[bytes] = []
    while chunk := await stream.read(READ_CHUNK_BYTES):
        parts = chunk.split(separator)
        if len(parts) == 1:
            pending.append(chunk)
            continue
        records = [b"".join([*pending, parts[0]]), *parts[1:-1]]
        pending = [parts[-1]]
        for record in records:
            if record and not on_record(record):
                return False
    rest = b"".join(pending)
    return not rest or on_record(rest)


async def _read_capped(stream: asyncio.StreamReader, limit: int) -> bytes:
    kept = bytearray()
    while chunk := await stream.read(READ_CHUNK_BYTES):
        if len(kept) < limit:
            kept += chunk[: limit - len(kept)]
    return bytes(kept)


def _kill(process: asyncio.subprocess.Process) -> None:
    if process.returncode is None:
        signal_group(process.pid, signal.SIGKILL)


def _rg_environment() -> dict[str, str]:
    return {name: value for name, value in os.environ.items() if name != "RIPGREP_CONFIG_PATH"}
