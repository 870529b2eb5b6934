"""A server on a non-loopback address warns at start and needs an API key."""

from __future__ import annotations

import stat
from pathlib import Path

import httpx2
import pytest

from server.exposure import is_loopback, load_or_create_api_key


def test_loopback_addresses():
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("::") and not is_loopback("192.168.1.5")


def test_the_generated_key_is_private_and_stable(tmp_path: Path):
    path = tmp_path / "state" / "api-key"
    key = load_or_create_api_key(path)
    assert key == load_or_create_api_key(path) and len(key) > 20
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


@pytest.mark.server
def test_start_on_all_interfaces_warns_and_requires_a_key(la_env, llama_server_binary):
    started = la_env.run("server", "start", "tiny-dflash", "--host", "0.0.0.0", "--port", "auto")
    assert started.code == 0, started.stderr
    assert "exposes the server to your network" in started.stderr and "api-key" in started.stderr
    [record] = la_env.status()
    key_file = la_env.home / "state" / "api-key"
    key = key_file.read_text().strip()
    url = f"http://127.0.0.1:{record['port']}/v1/models"
    assert httpx2.get(url, timeout=10).status_code == 401
    assert httpx2.get(url, headers={"Authorization": f"Bearer {key}"}, timeout=10).status_code == 200
    la_env.run("server", "stop")
    open_start = la_env.run("server", "start", "tiny-dflash", "--host", "0.0.0.0", "--port", "auto", "--no-api-key")
    assert open_start.code == 0, open_start.stderr
    assert "no API key" in open_start.stderr
    [record] = la_env.status()
    assert httpx2.get(f"http://127.0.0.1:{record['port']}/v1/models", timeout=10).status_code == 200
