"""Search a list of files with ripgrep and gather the matching lines from its JSON output."""

from __future__ import annotations

import asyncio
import base64
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tools.ripgrep_process import run_rg

# Paths per rg run are capped well below the kernel's argument limit (ARG_MAX).
MAX_ARGUMENT_BYTES = 128 * 1024


@dataclass(frozen=True)
class LineMatch:
    path: Path
    line_number: int
    # bytes when the line is not valid UTF-8; the file's encoding decides how it reads.
    line: str | bytes


@dataclass
class SearchOutcome:
    matches: list[LineMatch] = field(default_factory=list)
    binary_files: list[Path] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    capped: bool = False
    timed_out: bool = False


async def search_files(
    files: Sequence[Path],
    cwd: Path,
    rg_args: Sequence[str],
    max_matches: int,
    deadline: float,
) -> SearchOutcome:
    """Run `rg --json RG_ARGS -- FILES` in batches until done, until more than `max_matches`
    lines are found, or until `deadline` (event-loop time) passes.

    Files are given explicitly, so rg searches each as asked and its own ignore rules do not
    apply; a file holding NUL bytes is binary and its matches are left out.
    """
    outcome = SearchOutcome()
    loop = asyncio.get_running_loop()
    for batch in _batches(files, cwd):
        remaining = deadline - loop.time()
        if remaining <= 0:
            outcome.timed_out = True
            break
        collector = _JsonCollector({name: path for name, path in batch}, outcome, max_matches)
        # No file can contribute more lines than are kept, so none floods the output; one
        # thread in path order, so a capped search stops at the same lines every time.
        args = ["--json", "--sort=path", f"--max-count={max_matches + 1}", *rg_args]
        args += ["--", *(name for name, _ in batch)]
        run = await run_rg(args, cwd, remaining, collector)
        outcome.errors.extend(_file_errors(run.stderr))
        if run.timed_out:
            outcome.timed_out = True
        if outcome.capped or outcome.timed_out:
            break
    return outcome


class _JsonCollector:
    """Consumes rg's JSON events; a file's matches count only once its `end` shows it is text."""

    def __init__(self, paths: dict[str, Path], outcome: SearchOutcome, max_matches: int) -> None:
        self.paths = paths
        self.outcome = outcome
        self.max_matches = max_matches
        self.current: list[LineMatch] = []

    def __call__(self, record: bytes) -> bool:
        event = json.loads(record)
        kind, data = event.get("type"), event.get("data") or {}
        if kind == "begin":
            self.current = []
        elif kind == "match" and len(self.current) <= self.max_matches:
            path = self._path(data)
            self.current.append(LineMatch(path, int(data.get("line_number") or 0), _line(data.get("lines") or {})))
        elif kind == "end":
            if data.get("binary_offset") is not None:
                self.outcome.binary_files.append(self._path(data))
            else:
                self.outcome.matches.extend(self.current)
            self.current = []
            if len(self.outcome.matches) > self.max_matches:
                self.outcome.capped = True
                return False
        return True

    def _path(self, data: dict[str, Any]) -> Path:
        name = _text(data.get("path") or {})
        name = name if isinstance(name, str) else os.fsdecode(name)
        return self.paths.get(name) or Path(name)


def _line(lines: dict[str, Any]) -> str | bytes:
    line = _text(lines)
    if isinstance(line, bytes):
        return line.rstrip(b"\n").rstrip(b"\r")
    return line.rstrip("\n").rstrip("\r")


def _text(value: dict[str, Any]) -> str | bytes:
    # rg gives text that is valid UTF-8 as "text" and anything else base64-encoded as "bytes".
    if "text" in value:
        return str(value["text"])
    return base64.b64decode(value.get("bytes") or "")


def _batches(files: Sequence[Path], cwd: Path) -> list[list[tuple[str, Path]]]:
    batches: list[list[tuple[str, Path]]] = []
    current: list[tuple[str, Path]] = []
    size = 0
    for path in files:
        name = os.path.relpath(path, cwd)
        cost = len(os.fsencode(name)) + 1
        if current and size + cost > MAX_ARGUMENT_BYTES:
            batches.append(current)
            current, size = [], 0
        current.append((name, path))
        size += cost
    if current:
        batches.append(current)
    return batches


def _file_errors(stderr: str) -> list[str]:
    return [line.removeprefix("rg: ").strip() for line in stderr.splitlines() if line.strip()]
