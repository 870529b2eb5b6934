"""Programs localagent runs by name are never taken from the current directory: with an empty or
relative entry in PATH, a repository holding an `rg`, `unshare` or `nvidia-smi` of its own would
otherwise run it (in place of the sandbox's namespace helper, for `unshare`; on every checkpoint,
for `git`)."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest

from server.devices import visible_gpus
from tools import ripgrep_binary
from tools.safe_git import run_git
from tools.sandbox import namespace
from tools.sandbox.protected import _remove_tree


@pytest.fixture
def hostile_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("rg", "unshare", "nvidia-smi", "git", "rm"):
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
    # git runs inside the repository, where `git` in an empty PATH entry is the repository's own.
    run_git("init", "-q", cwd=hostile_cwd, env=dict(os.environ))
    assert (hostile_cwd / ".git").is_dir()
    assert not (hostile_cwd / "RAN").exists()


def test_a_tree_too_deep_for_rmtree_is_removed_by_the_systems_rm_not_the_repositorys(hostile_cwd: Path) -> None:
    deep = hostile_cwd / "deep"
    (deep / os.path.join(*["d"] * 300)).mkdir(parents=True)
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(150)  # rmtree recurses once per level: 300 levels overflow it
    try:
        _remove_tree(deep)
    finally:
        sys.setrecursionlimit(limit)
    assert not deep.exists()
    assert not (hostile_cwd / "RAN").exists()
