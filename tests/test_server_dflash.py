"""The real DFlash code path on a CPU: generated tiny target + draft served by the real binary."""

from __future__ import annotations

import re
import stat
from pathlib import Path

import httpx2
import pytest

from server.pinned_binary import PINNED_HELP
from server.telemetry import RequestTimings, parse_metrics

pytestmark = pytest.mark.server
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def test_server_check_drafts_and_accepts_with_echo_weights(la_env, llama_server_binary):
    result = la_env.run("server", "check")
    assert result.code == 0, result.stderr
    text = result.stdout
    assert f"binary:   {llama_server_binary}" in text
    assert "--spec-type draft-dflash --spec-draft-n-max 15" in text
    drafted = re.search(r"drafting: (\d+) drafted, (\d+) accepted", text)
    assert drafted, text
    assert int(drafted.group(1)) > 0 and int(drafted.group(2)) > 0
    assert "mean accepted length" in text and "ok: tiny-dflash serves and drafts" in text


def test_tiny_dflash_profile_serves_with_acceptance_in_metrics(la_env, llama_server_binary):
    assert la_env.run("server", "start", "tiny-dflash", "--port", "auto").code == 0
    [record] = la_env.status()
    base_url = f"http://127.0.0.1:{record['port']}"
    assert "--spec-type" in record["argv"] and "draft-dflash" in record["argv"]
    body = httpx2.post(
        f"{base_url}/v1/chat/completions",
        json={"messages": [{"role": "user", "content": "def add(a, b):"}], "max_tokens": 48, "temperature": 0},
        timeout=60,
    ).json()
    timings = RequestTimings.from_json(body["timings"])
    assert timings.draft_n and timings.draft_n > 0
    assert timings.draft_n_accepted and timings.draft_n_accepted > 0
    metrics = parse_metrics(httpx2.get(f"{base_url}/metrics").text)
    assert metrics.acceptance is not None and metrics.acceptance > 0.5
    assert metrics.mean_accepted_length is not None and metrics.mean_accepted_length > 2.0
    assert len(metrics.acceptance_by_position) >= 2


def test_random_draft_drafts_but_is_rejected(la_env, llama_server_binary):
    la_env.write_config(
        '[profiles.tiny-dflash-random]\nextends = "tiny-dflash"\n'
        '[profiles.tiny-dflash-random.speculative]\ndraft_model = { generated = "tiny-dflash-draft-random" }\n'
    )
    result = la_env.run("server", "check", "tiny-dflash-random")
    assert result.code == 0, result.stderr
    drafted = re.search(r"drafting: (\d+) drafted, (\d+) accepted", result.stdout)
    assert drafted and int(drafted.group(1)) > 0
    assert int(drafted.group(2)) < int(drafted.group(1))


def _fake_binary(tmp_path: Path, help_text: str) -> Path:
    help_file = tmp_path / "help.txt"
    help_file.write_text(help_text)
    script = tmp_path / "llama-server"
    script.write_text(f"#!/bin/sh\ncat {help_file}\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return script


def test_dflash_on_a_binary_without_dflash_is_one_clear_line(la_env, tmp_path):
    help_text = PINNED_HELP.read_text().replace("draft-dflash,", "")
    fake = _fake_binary(tmp_path, help_text)
    la_env.write_config(f'[server]\nbinary = "{fake}"\n')
    result = la_env.run("server", "check", "tiny-dflash")
    assert result.code == 2
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "needs DFlash speculative decoding" in lines[0]


def test_old_beellama_maps_dflash_with_cross_ctx(la_env, tmp_path):
    fake = _fake_binary(tmp_path, (FIXTURES / "beellama-old-help.txt").read_text())
    la_env.write_config(f'[server]\nbinary = "{fake}"\n')
    result = la_env.run("server", "cmd", "gemma4-31b-dflash")
    assert result.code == 0, result.stderr
    assert "--spec-type dflash --spec-dflash-cross-ctx 1024" in result.stdout
    assert "--no-mmap --mlock --no-host" in result.stdout
