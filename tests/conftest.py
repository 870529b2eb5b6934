"""Shared fixtures. Tests that need the real llama-server use the cached build; `.ci/run` builds it
first with `localagent server build`, so a missing binary is a failure, never a skip."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from localagent.paths import app_paths
from server.argv import DEFAULT_PORT
from server.binary import BINARY_ENV, newest_cached_build

# What a test uses decides its markers (pyproject.toml names them): `server` for the real
# llama-server, `slow` for that and for anything that runs the CLI or a terminal as a process.
# `pytest -m "not slow"` is the inner loop; under xdist every `server` test runs in one worker,
# one after another (two CPU-bound llama-servers at once on two cores crawl).
_SERVER_FIXTURES = frozenset({"llama_server_binary", "tiny_gguf"})
_PROCESS_FIXTURES = frozenset({"la_env"})
_SLOW_FILES = frozenset({"test_tui_tmux.py", "test_acp.py", "test_examples.py", "test_headless_claude_schema.py"})


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups off the items
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        if fixtures & _SERVER_FIXTURES:
            item.add_marker(pytest.mark.server)
        if item.get_closest_marker("server") is not None:
            item.add_marker(pytest.mark.xdist_group("llama-server"))
            item.add_marker(pytest.mark.slow)
        elif fixtures & _PROCESS_FIXTURES or item.path.name in _SLOW_FILES:
            item.add_marker(pytest.mark.slow)


def _shared_cache() -> Path:
    # The real cache (or the one CI points at): built binaries and assembled models are shared.
    return app_paths().cache


@pytest.fixture(scope="session")
def shared_cache() -> Path:
    return _shared_cache()


@pytest.fixture(scope="session")
def llama_server_binary(shared_cache: Path) -> Path:
    from_env = os.environ.get(BINARY_ENV)
    if from_env:
        return Path(from_env)
    found = newest_cached_build(shared_cache / "llama-server")
    if found is None:
        pytest.fail("no llama-server build in the cache; run `localagent server build` first (.ci/run does)")
    return found


@pytest.fixture
def tiny_chatml_server(llama_server_binary: Path, tiny_gguf: Path, tmp_path: Path) -> Iterator[str]:
    """The tiny model under the tiny profiles' ChatML-with-tools template, on a port of its own:
    for tests that read its /tokenize, /apply-template or a completion's timings."""
    from server.profiles import CHATML_TOOLS_TEMPLATE
    from tests.support.llama_process import running_llama_server

    flags = ["--jinja", "--chat-template-file", str(CHATML_TOOLS_TEMPLATE), "-c", "8192", "-np", "1", "-t", "2"]
    with running_llama_server(
        llama_server_binary, tiny_gguf, [*flags, "--no-warmup", "--metrics"], tmp_path / "log"
    ) as url:
        yield url


@pytest.fixture(scope="session")
def tiny_gguf(shared_cache: Path) -> Path:
    from server.models import tiny_model_path

    return tiny_model_path(shared_cache)


@dataclass
class CliResult:
    code: int
    stdout: str
    stderr: str


@dataclass
class LocalAgentEnv:
    """An isolated localagent home that shares the binary and model cache."""

    home: Path
    env: dict[str, str]
    workspace: Path

    def run(self, *args: str, timeout: float = 180.0, cwd: Path | None = None, input: str | None = None) -> CliResult:
        proc = subprocess.run(
            [sys.executable, "-m", "localagent.cli", *args],
            capture_output=True,
            text=True,
            env=self.env,
            cwd=cwd or self.workspace,
            timeout=timeout,
            input=input,
        )
        return CliResult(proc.returncode, proc.stdout, proc.stderr)

    def without_any_llama_server(self, empty_cache: Path) -> None:
        """From now on, no llama-server anywhere: an empty cache, none on PATH, none named."""
        env = {**self.env, "LOCALAGENT_CACHE_DIR": str(empty_cache), "PATH": "/usr/bin:/bin"}
        env.pop("LOCALAGENT_LLAMA_SERVER", None)
        self.env = env

    def write_config(self, text: str) -> Path:
        path = self.home / "config" / "config.toml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path

    def status(self) -> list[dict]:
        result = self.run("server", "status", "--json")
        assert result.code == 0, result.stderr
        return json.loads(result.stdout)


@pytest.fixture
def la_env(
    tmp_path: Path, shared_cache: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> LocalAgentEnv:
    home = tmp_path / "home"
    workspace = tmp_path / "work"
    workspace.mkdir()
    env = dict(os.environ)
    env["LOCALAGENT_HOME"] = str(home)
    env["LOCALAGENT_CACHE_DIR"] = str(shared_cache)
    for key, value in (("LOCALAGENT_HOME", str(home)), ("LOCALAGENT_CACHE_DIR", str(shared_cache))):
        monkeypatch.setenv(key, value)
    environment = LocalAgentEnv(home=home, env=env, workspace=workspace)
    yield environment
    # Never leave a server behind, whatever the test did; a home with no server record started
    # none, and is spared the stop (a CLI process, for most of the tests that use this).
    records = home / "state" / "servers"
    if records.is_dir() and any(records.iterdir()):
        environment.run("server", "stop", timeout=60)
    # A server the test's agent started in its own process (ACP, the TUI) is stopped as that
    # process ends, which may still be under way: the next real-server test wants the port free.
    if request.node.get_closest_marker("server") is not None:
        _wait_port_free(DEFAULT_PORT, seconds=15)


def _wait_port_free(port: int, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with socket.socket() as probe:
            probe.settimeout(0.2)
            if probe.connect_ex(("127.0.0.1", port)) != 0:
                return
        time.sleep(0.1)


@pytest.fixture(params=["bubblewrap", "landlock"])
def sandbox_layer(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Runs a test under each layer of the bash sandbox: bubblewrap where this machine has it
    (`.ci/run` installs it), and Landlock with bubblewrap kept out."""
    from tools import sandbox

    layer = str(request.param)
    if layer == "bubblewrap":
        program, why_not = sandbox.bubblewrap_status()
        if program is None:
            pytest.skip(f"bubblewrap does not work here: {why_not}")
    else:
        if not sandbox.landlock_support().available:
            pytest.skip(f"no Landlock here: {sandbox.landlock_support().reason}")
        monkeypatch.setattr(sandbox, "bubblewrap_status", lambda: (None, "kept out by the test"))
        monkeypatch.setenv("LOCALAGENT_SANDBOX_LAYER", "landlock")  # for agents this test starts
    return layer
