"""Programs localagent runs by name are never taken from the current directory: with an empty or
relative entry in PATH, a repository holding an `rg`, `unshare` or `nvidia-smi` of its own would
otherwise run it (in place of the sandbox's namespace helper, for `unshare`)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from server.devices import visible_gpus
from tools import ripgrep_binary
from tools.sandbox import namespace


@pytest.fixture
def hostile_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("rg", "unshare", "nvidia-smi"):
        program = tmp_path / name
        program.write_text(f"#!/bin/sh\ntouch {tmp_path / 'RAN'}\necho 'NVIDIA Fake GPU'\n")
        program.chmod(program.stat().st_mode | stat.S_IEXEC)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", os.pathsep.join(["", ".", os.environ.get("PATH", "")]))
    return tmp_path


def test_no_program_is_taken_from_the_repository(hostile_cwd: Path) -> None:
    assert all(hostile_cwd not in candidate.parents for candidate in ripgrep_binary._candidates())
    namespace.pid_namespace_prefix.cache_clear()
    try:
        prefix = namespace.pid_namespace_prefix()
    finally:
        namespace.pid_namespace_prefix.cache_clear()
    assert prefix is None or (Path(prefix[0]).is_absolute() and hostile_cwd not in Path(prefix[0]).parents)
    assert "NVIDIA Fake GPU" not in visible_gpus()
    assert not (hostile_cwd / "RAN").exists()
