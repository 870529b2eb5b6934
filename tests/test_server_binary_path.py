"""A program found on PATH is never one from the current directory: a relative PATH entry (".",
or an empty one) would let a repository's own `llama-server` or `rpc-server` stand in."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from server.binary import find_binary
from server.errors import BinaryError
from server.rpc_worker import find_worker_binary


def test_a_relative_path_entry_does_not_find_the_repositorys_programs(tmp_path: Path, monkeypatch) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    for name in ("llama-server", "rpc-server", "ggml-rpc-server"):
        program = repo / name
        program.write_text("#!/bin/sh\necho pwned\n")
        program.chmod(0o755)
    monkeypatch.chdir(repo)
    monkeypatch.delenv("LOCALAGENT_LLAMA_SERVER", raising=False)
    monkeypatch.setenv("PATH", f".{os.pathsep}{os.pathsep}/usr/bin{os.pathsep}/bin")
    with pytest.raises(BinaryError, match="no llama-server found"):
        find_binary(None, tmp_path / "no-builds")
    assert find_worker_binary(tmp_path / "elsewhere" / "llama-server") is None
