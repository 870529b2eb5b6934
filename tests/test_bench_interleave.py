"""``bench --interleave``: recorded sessions replayed turn by turn against one server, and what
each request read again because another session's turn came between."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from localagent.bench.interleave_command import summary_lines
from server.bench.interleave import InterleavedRequest, round_robin
from server.bench.replay_plan import ReplaySession

SAMPLES = Path(__file__).resolve().parents[1] / "examples" / "bench" / "sessions"


def session(name: str, requests: int) -> ReplaySession:
    return ReplaySession(name, name, name, None, [object()] * requests, requests)  # type: ignore[list-item]


def test_requests_go_round_robin_and_a_shorter_session_drops_out() -> None:
    order = [(s.name, i) for s, i in round_robin([session("a", 3), session("b", 1), session("c", 2)])]
    assert order == [("a", 0), ("b", 0), ("c", 0), ("a", 1), ("c", 1), ("a", 2)]


def test_the_summary_counts_later_requests_that_read_more_than_their_own_new_tokens() -> None:
    rows = [
        InterleavedRequest("a", 1, 2000, 2000, 0, 2000, 4.0),  # a session's first request never counts
        InterleavedRequest("b", 1, 2000, 1980, 20, 2000, 4.0),
        InterleavedRequest("a", 2, 2100, 105, 1995, 100, 0.2),  # within 10%
        InterleavedRequest("b", 2, 2100, 2100, 0, 100, 4.2),  # everything read again
    ]
    assert rows[3].extra == 2000 and rows[3].lost_s == pytest.approx(4.0)
    assert summary_lines(rows) == [
        "a: 0 of 1 later requests read more than their own new tokens + 10%; 5 tokens read again, 0.0 s of prefill lost",
        "b: 1 of 1 later requests read more than their own new tokens + 10%; 2000 tokens read again, 4.0 s of prefill lost",
    ]


@pytest.mark.usefixtures("llama_server_binary")
def test_two_sessions_on_one_managed_server_keep_their_caches(la_env) -> None:
    chat = str(SAMPLES / "tiny-chat.jsonl")
    out = la_env.workspace / "out"
    result = la_env.run(
        "bench", "--interleave", chat, chat, "--profiles", "tiny-baseline", "--out", str(out), timeout=600
    )
    assert result.code == 0, result.stderr
    rows = json.loads((out / "interleave.json").read_text())
    assert [(r["session"], r["index"]) for r in rows][:4] == [
        ("tiny-chat", 1),
        ("tiny-chat#2", 1),
        ("tiny-chat", 2),
        ("tiny-chat#2", 2),
    ]
    assert len(rows) == 10
    # The second session's first request reuses the first's whole prompt (the same session).
    assert rows[1]["reused"] >= rows[0]["prompt_tokens"] - 1
    later = [r for r in rows[2:]]
    assert all(r["read"] <= r["own_new"] * 1.1 + 1 for r in later), later
    assert "later requests read more than their own new tokens" in result.stdout


def test_an_auto_prompt_cache_is_a_quarter_of_free_memory_within_its_bounds(tmp_path: Path) -> None:
    from server.host_memory import AUTO_CAP_MIB, AUTO_FLOOR_MIB, auto_cache_mib, available_mib

    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:       32000000 kB\nMemAvailable:   20971520 kB\n")
    assert available_mib(meminfo) == 20480
    assert auto_cache_mib(20480) == 5120
    assert auto_cache_mib(200_000) == AUTO_CAP_MIB and auto_cache_mib(1000) == AUTO_FLOOR_MIB
    assert auto_cache_mib(None) == AUTO_FLOOR_MIB and available_mib(tmp_path / "none") is None
