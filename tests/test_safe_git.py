"""A repository's own git configuration cannot make localagent's git commands run anything."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from agent.checkpoints import CheckpointStore
from tools.safe_git import git_env, run_git

SESSION = "20261201-090000-aa11bb"


def _git(repo: Path, *args: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, check=True)


def _hook(path: Path, marker: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\ntouch {marker}\ncat\n")
    path.chmod(0o755)


@pytest.fixture
def hostile_repo(tmp_path: Path) -> tuple[Path, Path]:
    """A repository whose config names a program under every key that runs one."""
    repo, markers = tmp_path / "repo", tmp_path / "markers"
    repo.mkdir()
    markers.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "config", "user.name", "T")
    _git(repo, "config", "user.email", "t@example.com")
    (repo / "a.txt").write_text("one\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "init")
    script = markers / "run.sh"
    script.write_text(f'#!/bin/sh\ntouch "{markers}/$1"\ncat\n')
    script.chmod(0o755)
    settings = {
        "core.fsmonitor": f"{script} fsmonitor",
        "core.pager": f"{script} pager",
        "core.hooksPath": str(repo / "evil-hooks"),
        "core.sshCommand": f"{script} ssh",
        "diff.external": f"{script} external-diff",
        "diff.evil.textconv": f"{script} textconv",
        "filter.evil.clean": f"{script} clean",
        "filter.evil.smudge": f"{script} smudge",
        "filter.evil.required": "true",
        "commit.gpgSign": "true",
        "gpg.program": f"{script} gpg",
    }
    for key, value in settings.items():
        _git(repo, "config", key, value)
    for hook in ("reference-transaction", "post-checkout", "pre-commit", "post-index-change", "pre-auto-gc"):
        _hook(repo / "evil-hooks" / hook, markers / f"hook-{hook}")
        _hook(repo / ".git" / "hooks" / hook, markers / f"default-hook-{hook}")
    (repo / ".gitattributes").write_text("* filter=evil diff=evil\n")
    return repo, markers


def test_checkpoints_undo_and_diff_run_nothing_a_repository_names(hostile_repo, tmp_path: Path):
    repo, markers = hostile_repo
    store = CheckpointStore(repo, SESSION, tmp_path / "data")
    first = store.create_sync("before turn 1")
    (repo / "a.txt").write_text("two\n")
    (repo / "b.txt").write_text("new\n")
    store.create_sync("before turn 2")
    assert "two" in store.diff_since_sync(first)
    assert store.undo_last_turn_sync() is not None
    store.restore_sync(first)
    assert (repo / "a.txt").read_text() == "one\n"
    assert sorted(p.name for p in markers.iterdir()) == ["run.sh"], "a repository setting ran a program"


def test_injected_git_environment_is_dropped():
    env = git_env(
        {
            "PATH": "/usr/bin",
            "GIT_CONFIG_COUNT": "1",
            "GIT_CONFIG_KEY_0": "core.fsmonitor",
            "GIT_CONFIG_VALUE_0": "touch x",
            "GIT_EXTERNAL_DIFF": "touch y",
            "GIT_SSH_COMMAND": "touch z",
            "GIT_DIR": "/elsewhere",
            "GIT_PAGER": "less",
        }
    )
    assert env["PATH"] == "/usr/bin"
    for name in (
        "GIT_CONFIG_COUNT",
        "GIT_CONFIG_KEY_0",
        "GIT_EXTERNAL_DIFF",
        "GIT_SSH_COMMAND",
        "GIT_DIR",
        "GIT_PAGER",
    ):
        assert name not in env
    assert env["GIT_CONFIG_NOSYSTEM"] == "1" and env["GIT_CONFIG_GLOBAL"] == os.devnull


def test_a_filter_named_with_an_equals_sign_is_switched_off_too(tmp_path: Path):
    repo, markers = tmp_path / "repo", tmp_path / "markers"
    repo.mkdir()
    markers.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "config", "filter.a=b.clean", f"touch {markers}/clean; cat")
    _git(repo, "config", "filter.a=b.smudge", f"touch {markers}/smudge; cat")
    (repo / ".gitattributes").write_text("* filter=a=b\n")
    (repo / "f.txt").write_text("hi\n")
    store = CheckpointStore(repo, SESSION, tmp_path / "data")
    first = store.create_sync("t1")
    (repo / "f.txt").write_text("changed\n")
    store.restore_sync(first)
    assert (repo / "f.txt").read_text() == "hi\n"
    assert list(markers.iterdir()) == []


def test_git_gets_no_secrets_and_a_fifo_config_does_not_hang(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-" + "x" * 40)
    assert "OPENAI_API_KEY" not in git_env()
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    os.mkfifo(repo / "fifo")
    _git(repo, "config", "include.path", str(repo / "fifo"))
    from tools import safe_git

    monkeypatch.setattr(safe_git, "GIT_TIMEOUT_SECONDS", 2.0)
    monkeypatch.setattr("agent.checkpoints.store.GIT_TIMEOUT_SECONDS", 2.0)
    from agent.checkpoints import CheckpointError

    store = CheckpointStore(repo, SESSION, tmp_path / "data")
    with pytest.raises(CheckpointError):
        store.create_sync("t1")


def test_what_this_process_has_and_the_hardening_drops_never_reaches_git(tmp_path: Path, monkeypatch) -> None:
    """GitPython starts every command's environment from this process's own; what git_env drops
    must still not arrive (seen from inside git, through an alias that prints the environment)."""
    secret = "sk-" + "y" * 40
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    monkeypatch.setenv("GIT_EXTERNAL_DIFF", "touch y")
    monkeypatch.setenv("GIT_CONFIG_PARAMETERS", "'core.fsmonitor=touch z'")
    monkeypatch.setenv("GIT_INDEX_FILE", str(tmp_path / "a-hooks-index"))
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    env = git_env(GIT_DIR=str(repo / ".git"), GIT_WORK_TREE=str(repo))
    done = run_git("printenv", cwd=repo, env=env, filters=[], options=[("alias.printenv", "!env")])
    seen = dict(line.split("=", 1) for line in done.stdout.decode().splitlines() if "=" in line)
    assert secret not in done.stdout.decode()
    # Git passes its own -c options (the alias) on to what it runs; the injected one is gone.
    assert seen.get("GIT_EXTERNAL_DIFF", "") == "" and "touch z" not in seen.get("GIT_CONFIG_PARAMETERS", "")
    assert seen.get("GIT_INDEX_FILE") != str(tmp_path / "a-hooks-index")
    assert seen["GIT_CONFIG_NOSYSTEM"] == "1" and seen["GIT_CONFIG_COUNT"] != ""


def test_a_git_config_variable_from_a_hook_cannot_hide_the_repositorys_filters(tmp_path: Path, monkeypatch) -> None:
    """An inherited GIT_CONFIG (even an empty one, which git reads as a file name) must not stop
    localagent from finding the repository's filter drivers, which it then switches off."""
    repo, markers = tmp_path / "repo", tmp_path / "markers"
    repo.mkdir()
    markers.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "config", "filter.x.clean", f"touch {markers}/clean; cat")
    (repo / ".gitattributes").write_text("* filter=x\n")
    (repo / "f.txt").write_text("hi\n")
    for value in ("", str(tmp_path / "elsewhere.config")):
        monkeypatch.setenv("GIT_CONFIG", value)
        monkeypatch.setenv("GIT_WORK_TREE", str(tmp_path))
        store = CheckpointStore(repo, SESSION, tmp_path / f"data{len(value)}")
        store.create_sync("t1")
        assert list(markers.iterdir()) == [], "the repository's clean filter ran"
