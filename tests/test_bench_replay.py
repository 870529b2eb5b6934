"""``localagent bench --replay``: a session records its model requests; replaying it sends those
requests again, in order and byte for byte in their messages and tools, and the report's cache
accounting, totals and prompt-length bins come from what the server said."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agent.sessions import SessionError
from localagent.bench.session_replay import read_session_file, replay_session
from server.bench.client import Endpoint
from server.bench.replay_plan import ReplayRequest, ReplaySession, ReplaySettings, ReplayWorkload
from server.bench.replay_summary import BIN_EDGES, bin_of, length_bins, summarize_replay
from server.bench.results import RequestResult, TargetResult
from server.bench.workload import Row
from tests.support.scripted_model import ScriptedModelServer, ScriptedToolCall, ScriptedTurn

SAMPLES = Path(__file__).resolve().parents[1] / "examples" / "bench" / "sessions"


def one_line_error(result) -> str:
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    return lines[0]


def record_session(la_env) -> tuple[Path, list[dict]]:
    """Two turns of a scripted agent session: tool calls, their results, answers."""
    (la_env.workspace / "notes.txt").write_text("alpha\nbeta\n")
    first = [
        ScriptedTurn(tool_calls=[ScriptedToolCall("view", {"path": "notes.txt"})]),
        ScriptedTurn(tool_calls=[ScriptedToolCall("grep", {"pattern": "beta"})]),
        ScriptedTurn(text="notes.txt has two lines, alpha and beta."),
    ]
    with ScriptedModelServer(first) as srv:
        result = la_env.run("run", "what is in notes.txt?", "--base-url", srv.base_url)
        assert result.code == 0, result.stderr
        srv.add_turns(ScriptedTurn(text="It has no third line."))
        result = la_env.run("run", "and the third line?", "--base-url", srv.base_url, "-c")
        assert result.code == 0, result.stderr
        bodies = list(srv.requests)
    [path] = (la_env.home / "data" / "sessions").rglob("*.jsonl")
    return path, bodies


def test_a_replay_sends_the_sessions_requests_in_order_with_their_exact_messages_and_tools(la_env) -> None:
    session_file, original = record_session(la_env)
    assert len(original) == 4
    out = la_env.workspace / "replay"
    # A warm-up answer, then one per replayed request.
    with ScriptedModelServer(["warm"] + ["replayed"] * 4, speculative=True) as srv:
        result = la_env.run(
            "bench", "--replay", str(session_file), "--base-url", f"again={srv.url}", "--runs", "1", "--out", str(out)
        )
        replayed = list(srv.requests)[1:]
    assert result.code == 0, result.stderr
    assert [body["messages"] for body in replayed] == [body["messages"] for body in original]
    assert [body["tools"] for body in replayed] == [body["tools"] for body in original]
    assert all(body["temperature"] == 0 and body["stream"] and body["cache_prompt"] for body in replayed)
    # Each answer may be as long as the recorded one (scripted tokens are 4 characters).
    data = json.loads((out / "results.json").read_text())
    [target] = data["results"]["targets"]
    recorded = [
        line for line in map(json.loads, session_file.read_text().splitlines()) if line["type"] == "request_recorded"
    ]
    assert [body["max_tokens"] for body in replayed] == [max(r["timings"]["predicted_n"], 1) for r in recorded]
    # The cache accounting is the server's: from the second request on, the replay's prefixes are
    # the session's, so the server reuses exactly what it reused then.
    rows = target["requests"]
    assert [row["prompt"] for row in rows] == ["request 001", "request 002", "request 003", "request 004"]
    assert [row["cached_tokens"] for row in rows[1:]] == [r["timings"]["cache_n"] for r in recorded[1:]]
    assert [row["prompt_processed"] for row in rows[1:]] == [r["timings"]["prompt_n"] for r in recorded[1:]]
    summary = data["replay_summary"]
    [totals] = summary["totals"]
    assert totals["cached_tokens"] == sum(row["cached_tokens"] for row in rows)
    assert totals["prompt_tokens"] == sum(row["prompt_tokens"] for row in rows)
    assert totals["processed_tokens"] == sum(row["prompt_processed"] for row in rows)
    assert summary["requests"] == summary["common"] == 4
    report = (out / "report.md").read_text()
    assert "recorded history" in report and "## By prompt length" in report
    assert (out / "chart.png").read_bytes().startswith(b"\x89PNG")


def test_a_session_id_and_last_name_the_same_session_as_its_file(la_env) -> None:
    session_file, _ = record_session(la_env)
    by_file = read_session_file(session_file)
    plan = replay_session(by_file, "x", str(session_file))
    assert [r.turn for r in plan.requests] == [1, 1, 1, 2]
    assert plan.model == "scripted"
    # Each request extends the one before it: the history only grows within a session.
    for before, after in zip(plan.requests, plan.requests[1:], strict=False):
        assert after.messages[: len(before.messages)] == before.messages
    # The tool calls' recorded time follows the answer that made them.
    assert plan.requests[0].tool_seconds > 0 and plan.requests[2].tool_seconds == 0
    with ScriptedModelServer(["warm", "a", "b", "c", "d"]) as srv:
        result = la_env.run("bench", "--replay", "last", "--base-url", srv.url, "--out", str(la_env.workspace / "o"))
        assert result.code == 0, result.stderr
        assert "replay of" in result.stdout


def test_the_shipped_sample_sessions_replay_as_recorded() -> None:
    for name, turns in (("scripted-build", 2), ("scripted-edits", 2), ("tiny-chat", 4)):
        path = SAMPLES / f"{name}.jsonl"
        plan = replay_session(read_session_file(path), name, str(path))
        assert plan.turns == turns and len(plan.requests) >= turns
        if name == "scripted-edits":  # the edit-heavy session: over 30 requests
            assert len(plan.requests) >= 30
        assert all(r.messages[0]["role"] == "system" and r.tools for r in plan.requests)
        assert [r.index for r in plan.requests] == list(range(1, len(plan.requests) + 1))


# -- what a replay sends -----------------------------------------------------------------------------


def make_request(index: int = 1, completion: int | None = 20, sampling: dict | None = None) -> ReplayRequest:
    from server.bench.replay_plan import RecordedNumbers

    return ReplayRequest(
        index=index,
        turn=1,
        system="s",
        history=[{"role": "user", "content": "u"}],
        sent=1,
        tools=[{"type": "function", "function": {"name": "view"}}],
        sampling=sampling or {},
        recorded=RecordedNumbers(completion_tokens=completion),
    )


def test_the_body_keeps_the_sessions_sampling_but_the_targets_stop_strings_and_a_fixed_temperature() -> None:
    sampling = {"stop": ["<end>"], "max_tokens": 4096, "top_k": 5, "n_probs": 100000, "grammar": "root ::= x"}
    session = ReplaySession("s", "s.jsonl", "id", "m", [make_request(sampling=sampling)], 1)
    endpoint = Endpoint("http://127.0.0.1:1")
    body = ReplayWorkload(session).body(endpoint, Row("request 001"), ["<|im_end|>"])
    assert body["stop"] == ["<|im_end|>"] and body["top_k"] == 5 and body["temperature"] == 0
    assert body["max_tokens"] == 20  # the recorded answer's length, not the agent's cap
    # Only sampling travels: a session file cannot make the server do other work.
    assert "n_probs" not in body and "grammar" not in body
    assert body["messages"] == [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
    # A server given by URL keeps the session's stop strings; --temperature session keeps its sampling.
    kept = ReplayWorkload(session, ReplaySettings(temperature=None, max_tokens=8)).body(
        endpoint, Row("request 001"), None
    )
    assert kept["stop"] == ["<end>"] and "temperature" not in kept and kept["max_tokens"] == 8
    unrecorded = ReplaySession("s", "s.jsonl", "id", "m", [make_request(completion=None)], 1)
    assert ReplayWorkload(unrecorded).body(endpoint, Row("request 001"), [])["max_tokens"] == 512
    endless = ReplaySession("s", "s.jsonl", "id", "m", [make_request(completion=10**9)], 1)
    assert ReplayWorkload(endless).body(endpoint, Row("request 001"), [])["max_tokens"] == 8192


# -- totals and bins ------------------------------------------------------------------------------------


def row(
    name: str,
    prompt: int,
    cached: int,
    tokens: int,
    gen_s: float,
    wall_s: float,
    *,
    drafted: int | None = None,
    accepted: int | None = None,
    ok: bool = True,
) -> RequestResult:
    return RequestResult(
        prompt=name,
        run=1,
        ok=ok,
        prompt_tokens=prompt,
        cached_tokens=cached,
        prompt_processed=prompt - cached,
        completion_tokens=tokens,
        gen_seconds=gen_s,
        prompt_seconds=wall_s - gen_s,
        wall_s=wall_s,
        draft_n=drafted,
        draft_accepted=accepted,
        error=None if ok else "exceeds the context",
    )


def test_totals_are_over_the_requests_every_target_completed_and_speedups_are_against_the_first() -> None:
    requests = [make_request(i) for i in (1, 2, 3)]
    session = ReplaySession(
        "s", "s.jsonl", "id", "m", [ReplayRequest(**{**r.__dict__, "tool_seconds": 1.0}) for r in requests], 1
    )
    base = TargetResult(
        "base",
        "profile",
        model="a.gguf",
        requests=[
            row("request 001", 1000, 0, 10, 1.0, 2.0),
            row("request 002", 1100, 1000, 10, 1.0, 1.2),
            row("request 003", 9000, 1100, 10, 1.0, 3.0),
        ],
    )
    fast = TargetResult(
        "fast",
        "profile",
        model="a.gguf",
        requests=[
            row("request 001", 1000, 0, 10, 0.25, 1.25, drafted=12, accepted=9),
            row("request 002", 1100, 1000, 10, 0.25, 0.45, drafted=8, accepted=2),
            row("request 003", 9000, 0, 0, 0, 0, ok=False),
        ],
    )
    other = TargetResult("other", "profile", model="b.gguf", requests=base.requests)
    summary = summarize_replay(session, [base, fast, other])
    assert summary.common == 2 and summary.tool_seconds == 2.0
    b, f, o = summary.totals
    assert (b.model_seconds, f.model_seconds) == (pytest.approx(3.2), pytest.approx(1.7))
    assert f.requests_failed == 1 and f.requests_ok == 2
    assert (b.cached_tokens, b.prompt_tokens, b.processed_tokens) == (1000, 2100, 1100)
    assert f.token_speedup == pytest.approx(4.0)
    assert f.session_speedup == pytest.approx(3.2 / 1.7)
    assert f.wall_speedup == pytest.approx((3.2 + 2.0) / (1.7 + 2.0))
    assert f.acceptance == pytest.approx(11 / 20) and b.acceptance is None
    assert f.same_model and not o.same_model


def test_requests_are_binned_by_each_servers_own_prompt_length() -> None:
    base = TargetResult(
        "base",
        "profile",
        requests=[
            row("request 001", 300, 0, 10, 1.0, 1.0),
            row("request 002", 1500, 0, 30, 1.0, 1.0),
            row("request 003", 1600, 0, 10, 1.0, 1.0),
        ],
    )
    spec = TargetResult(
        "spec",
        "profile",
        requests=[
            row("request 001", 300, 0, 10, 0.5, 1.0, drafted=10, accepted=10),
            row("request 002", 1500, 0, 30, 0.5, 1.0, drafted=10, accepted=5),
            row("request 003", 1600, 0, 10, 0.5, 1.0, drafted=10, accepted=0),
        ],
    )
    bins = length_bins([base, spec])
    assert [b.label for b in bins] == ["<512", "1k–2k"]
    small, mid = bins
    assert small.cell("base").requests == 1 and mid.cell("spec").requests == 2
    assert mid.cell("base").tps == pytest.approx(20.0) and mid.cell("spec").tps == pytest.approx(40.0)
    assert mid.cell("spec").acceptance == pytest.approx(0.25) and mid.cell("base").acceptance is None


@given(st.integers(min_value=0, max_value=10**7))
def test_every_prompt_length_falls_in_exactly_the_bin_whose_edges_hold_it(tokens: int) -> None:
    low, high = bin_of(tokens)
    assert low <= tokens and (high is None or tokens < high)
    assert low in (0, *BIN_EDGES) and (high is None or high in BIN_EDGES)


# -- hostile or broken session files ------------------------------------------------------------------

HEADER = {
    "type": "session",
    "format": 1,
    "session_id": "s1",
    "workspace": "/w",
    "created": "2026-01-01T00:00:00Z",
    "localagent_version": "0",
}
SETUP = {"type": "request_setup", "system": "sys", "tools": [], "sampling": {}, "model": "m"}
USER = {"type": "message", "message": {"role": "user", "content": "hi"}}


def write_session(path: Path, *events: dict | str) -> Path:
    lines = [json.dumps(HEADER), *(e if isinstance(e, str) else json.dumps(e) for e in events)]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize(
    ("events", "message"),
    [
        ((USER,), "no recorded model requests"),
        ((USER, {"type": "request_recorded", "messages": 2}), "before any request_setup"),
        ((SETUP, USER, {"type": "request_recorded", "messages": 9}), "the history has only 2"),
        ((SETUP, USER, {"type": "request_recorded", "messages": "two"}), "malformed (messages"),
        ((SETUP, {"type": "message", "message": "not a dict"}), "malformed"),
        (({**SETUP, "tools": "all"}, USER, {"type": "request_recorded", "messages": 2}), "malformed (tools"),
        ((SETUP, {"type": "history_replaced", "messages": 3}), "without a list of messages"),
    ],
)
def test_a_broken_session_file_is_one_line_naming_the_line(la_env, events, message) -> None:
    path = write_session(la_env.workspace / "bad.jsonl", *events)
    result = la_env.run("bench", "--replay", str(path), "--base-url", "http://127.0.0.1:9")
    assert result.code == 2
    line = one_line_error(result)
    assert message in line and "bad.jsonl" in line
    assert not (la_env.workspace / "bench-results").exists()


def test_a_fifo_a_directory_or_a_missing_file_is_refused_without_waiting(la_env) -> None:
    fifo = la_env.workspace / "pipe.jsonl"
    os.mkfifo(fifo)
    for named, message in (
        (str(fifo), "not a regular file"),
        (str(la_env.workspace), "not a regular file"),
        ("gone/none.jsonl", "cannot read session file"),
    ):
        result = la_env.run("bench", "--replay", named, "--base-url", "http://127.0.0.1:9", timeout=30)
        assert result.code == 2, result.stderr
        assert message in one_line_error(result)


def test_a_file_with_more_requests_than_any_session_is_refused(tmp_path: Path) -> None:
    from localagent.bench.session_replay import MAX_REPLAY_REQUESTS

    records = [{"type": "request_recorded", "messages": 2}] * (MAX_REPLAY_REQUESTS + 1)
    path = write_session(tmp_path / "many.jsonl", SETUP, USER, *records)
    with pytest.raises(SessionError, match=f"more than {MAX_REPLAY_REQUESTS} model requests"):
        replay_session(read_session_file(path), "many", str(path))


def test_markup_in_a_session_name_is_printed_as_text(la_env) -> None:
    session_file, _ = record_session(la_env)
    named = la_env.workspace / "[bold]x.jsonl"
    named.write_bytes(session_file.read_bytes())
    with ScriptedModelServer(["warm", "a", "b", "c", "d"]) as srv:
        result = la_env.run(
            "bench", "--replay", str(named), "--base-url", srv.url, "--out", str(la_env.workspace / "o")
        )
    assert result.code == 0, result.stderr
    assert "replay of [bold]x:" in result.stdout


def test_an_oversized_file_is_refused_before_it_is_parsed(tmp_path: Path) -> None:
    path = write_session(tmp_path / "big.jsonl", USER, "x" * 2048)
    with pytest.raises(SessionError, match="over 0 MiB"):
        read_session_file(path, max_bytes=1024)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--prompts", "p.txt"), "does not take --prompts"),
    ],
)
def test_options_a_replay_cannot_honour_are_refused(la_env, args, message) -> None:
    result = la_env.run("bench", "--replay", "last", *args)
    assert result.code == 2
    assert message in one_line_error(result)


def test_temperature_belongs_to_a_replay(la_env) -> None:
    result = la_env.run("bench", "--temperature", "0.5", "--profiles", "tiny")
    assert result.code == 2
    assert "--temperature goes with --replay" in one_line_error(result)
    result = la_env.run("bench", "--replay", "last", "--temperature", "hot")
    assert result.code == 2 and "not a number" in result.stderr


# -- the real llama-server ------------------------------------------------------------------------------


@pytest.mark.server
def test_replaying_the_scripted_sample_on_dflash_against_its_baseline(la_env, llama_server_binary) -> None:
    out = la_env.workspace / "dflash"
    result = la_env.run(
        "bench",
        "--replay",
        str(SAMPLES / "scripted-build.jsonl"),
        "--profiles",
        "tiny-dflash-baseline",
        "tiny-dflash",
        "--max-tokens",
        "32",
        "--out",
        str(out),
        timeout=600,
    )
    assert result.code == 0, result.stderr
    data = json.loads((out / "results.json").read_text())
    base, dflash = data["replay_summary"]["totals"]
    assert base["drafted"] is None and dflash["drafted"] > 0 and dflash["accepted"] > 0
    assert dflash["same_model"] is True
    # One server per profile, the requests in order: from the second on, most of each prompt is cached.
    rows = data["results"]["targets"][1]["requests"]
    assert all(r["ok"] for r in rows)
    assert all(r["cached_tokens"] > r["prompt_processed"] for r in rows[1:])
    report = (out / "report.md").read_text()
    assert "## Reading the two speedups" in report and "tiny-dflash-baseline" in report


@pytest.mark.server
def test_a_sweep_scores_its_settings_on_a_replay(la_env, llama_server_binary) -> None:
    out = la_env.workspace / "sweep"
    result = la_env.run(
        "bench",
        "--sweep",
        "--replay",
        str(SAMPLES / "scripted-build.jsonl"),
        "--profiles",
        "tiny-dflash",
        "--grid",
        "n_max=4",
        "--max-tokens",
        "16",
        "--out",
        str(out),
        timeout=600,
    )
    assert result.code == 0, result.stderr
    assert "fastest on this session" in result.stdout
    data = json.loads((out / "results.json").read_text())["results"]
    assert [t["label"] for t in data["targets"]] == ["current", "n_max=4"]
    assert data["sweep"]["scored_on"] == "a replay of scripted-build"
    assert data["sweep"]["best"] in ("current", "n_max=4")
    assert "scored on a replay of scripted-build" in (out / "report.md").read_text()


def test_a_resumed_session_with_a_call_the_first_run_left_unanswered_replays_as_sent(la_env) -> None:
    """The resumed agent sends a repaired history (an "interrupted" result for the dangling call)
    that was never recorded as messages; the replay must rebuild it the same way."""
    session_file, _ = record_session(la_env)
    lines = session_file.read_text().splitlines()
    # Cut the first run after its first tool call was asked for: no result, no more requests.
    first_call = next(i for i, line in enumerate(lines) if '"tool_call_started"' in line)
    session_file.write_text("\n".join(lines[:first_call]) + "\n")
    with ScriptedModelServer(["resumed answer"]) as srv:
        result = la_env.run("run", "go on", "--base-url", srv.base_url, "-c")
        assert result.code == 0, result.stderr
        sent = list(srv.requests)
    plan = replay_session(read_session_file(session_file), "s", str(session_file))
    assert plan.requests[-1].messages == sent[-1]["messages"]


@pytest.mark.parametrize(
    "record",
    [
        {"type": "request_recorded", "messages": 2, "timings": {"predicted_n": float("inf")}},
        {"type": "request_recorded", "messages": 2, "duration_s": float("nan")},
        "[" * 100_000,
    ],
)
def test_infinite_numbers_and_deep_nesting_are_refused_or_skipped_not_a_traceback(la_env, record) -> None:
    path = write_session(la_env.workspace / "odd.jsonl", SETUP, USER, record)
    result = la_env.run("bench", "--replay", str(path), "--base-url", "http://127.0.0.1:9")
    assert result.code == 2
    one_line_error(result)


def test_a_target_that_completed_nothing_leaves_the_others_comparable() -> None:
    session = ReplaySession("s", "s.jsonl", "id", "m", [make_request(1), make_request(2)], 1)
    dead = TargetResult(
        "dead",
        "profile",
        error="did not start",
        requests=[row("request 001", 0, 0, 0, 0, 0, ok=False), row("request 002", 0, 0, 0, 0, 0, ok=False)],
    )
    a = TargetResult(
        "a", "profile", requests=[row("request 001", 100, 0, 10, 1.0, 2.0), row("request 002", 200, 100, 10, 1.0, 2.0)]
    )
    b = TargetResult(
        "b", "profile", requests=[row("request 001", 100, 0, 10, 0.5, 1.0), row("request 002", 200, 100, 10, 0.5, 1.0)]
    )
    summary = summarize_replay(session, [a, dead, b])
    assert summary.common == 2
    totals = {t.target: t for t in summary.totals}
    assert totals["dead"].requests_failed == 2 and totals["dead"].model_seconds == 0
    assert totals["b"].session_speedup == pytest.approx(2.0)


def test_a_dollar_in_a_name_does_not_break_the_chart(tmp_path: Path) -> None:
    from localagent.bench.replay_chart import write_replay_chart

    a = TargetResult("$a^$", "profile", requests=[row("request 001", 100, 0, 10, 1.0, 2.0)])
    session = ReplaySession("$x^$", "s.jsonl", "id", "m", [make_request(1)], 1)
    write_replay_chart(summarize_replay(session, [a]), tmp_path / "c.png", tmp_path / "c.svg", "replay of $x^$")
    assert (tmp_path / "c.png").read_bytes().startswith(b"\x89PNG")


def test_the_report_names_the_noise_it_can_see_in_prefill() -> None:
    from localagent.bench.replay_report import _reading_section

    session = ReplaySession("s", "s.jsonl", "id", "m", [make_request(1)], 1)
    slow = TargetResult("base", "profile", model="m.gguf", requests=[row("request 001", 1000, 0, 10, 1.0, 3.0)])
    fast = TargetResult("spec", "profile", model="m.gguf", requests=[row("request 001", 1000, 0, 10, 0.5, 1.5)])
    text = "\n".join(_reading_section(summarize_replay(session, [slow, fast])))
    assert "prefill is the same work on both" in text and "100%" in text
    same = TargetResult("spec", "profile", model="m.gguf", requests=[row("request 001", 1000, 0, 10, 0.5, 2.5)])
    assert "noise" not in "\n".join(_reading_section(summarize_replay(session, [slow, same])))


# -- runs --------------------------------------------------------------------------------------------


def test_replays_repeat_interleaved_and_report_median_and_spread(la_env) -> None:
    """Three runs by default, the targets interleaved (A B, B A, A B); each target's speedups over
    the runs, and a verdict when the runs disagree more than the targets differ."""
    session_file, _ = record_session(la_env)
    order: list[str] = []

    def answering(name: str):
        def turn(_body: dict) -> ScriptedTurn:
            order.append(name)
            return ScriptedTurn(text="replayed answer " * 4)

        return turn

    out = la_env.workspace / "runs"
    with (
        ScriptedModelServer([answering("slow")] * 15, tokens_per_second=40) as slow,
        ScriptedModelServer([answering("fast")] * 15, tokens_per_second=160) as fast,
    ):
        result = la_env.run(
            "bench", "--replay", str(session_file), "--base-url", f"slow={slow.url}", f"fast={fast.url}",
            "--out", str(out), timeout=300,
        )  # fmt: skip
    assert result.code == 0, result.stderr
    # A warm-up and four requests per pass: slow, fast | fast, slow | slow, fast.
    blocks = [order[i] for i in range(0, len(order), 5)]
    assert blocks == ["slow", "fast", "fast", "slow", "slow", "fast"], order
    runs = json.loads((out / "results.json").read_text())["replay_runs"]
    assert runs["runs"] == 3 and len(runs["per_run"]) == 2
    base, faster = runs["targets"]
    assert base["session_speedup"] is None  # the baseline is 1× by definition
    speedups = faster["session_speedup"]
    assert len(speedups["values"]) == 3 and speedups["low"] <= speedups["median"] <= speedups["high"]
    # The scripted servers answer as fast as each other in wall time; their reported rates differ 4×.
    assert faster["token_speedup"]["median"] > 2
    inconclusive = speedups["high"] - speedups["low"] > abs(speedups["median"] - 1)
    assert faster["inconclusive"] is inconclusive
    assert ("this replay cannot say" in result.stdout) is inconclusive
    assert "over 3 runs (interleaved)" in result.stdout
    assert "## Over 3 runs" in (out / "report.md").read_text()


def test_a_spread_wider_than_the_difference_is_called_inconclusive() -> None:
    from server.bench.replay_runs import Spread, TargetRuns, interleaved

    seconds = Spread((1.0,))
    assert TargetRuns("x", Spread((0.83, 1.10, 1.61)), None, seconds).inconclusive
    assert not TargetRuns("x", Spread((1.40, 1.50, 1.55)), None, seconds).inconclusive
    assert not TargetRuns("x", Spread((1.2,)), None, seconds).inconclusive  # one run: nothing to compare
    assert [interleaved("AB", run) for run in range(3)] == [["A", "B"], ["B", "A"], ["A", "B"]]


def test_a_wide_spread_on_one_side_of_one_says_which_is_faster_but_not_by_how_much() -> None:
    from localagent.bench.replay_report import runs_verdicts
    from server.bench.replay_runs import Spread, TargetRuns

    seconds = Spread((1.0,))
    # Measured on the edit-heavy sample: every run faster, the spread wider than the gain.
    faster = TargetRuns("tiny", Spread((1.05, 1.08, 1.16)), None, seconds)
    both_sides = TargetRuns("other", Spread((0.83, 1.10, 1.61)), None, seconds)
    slower = TargetRuns("slow", Spread((0.80, 0.95, 0.97)), None, seconds)
    lines = runs_verdicts([faster, both_sides, slower])
    assert lines == [
        "tiny: the runs spread (1.05–1.16×) wider than the difference from the baseline (1.08×): "
        "all 3 runs were faster, but by how much this replay cannot say",
        "other: the runs spread (0.83–1.61×) wider than the difference from the baseline (1.10×): "
        "this replay cannot say which is faster",
        "slow: the runs spread (0.80–0.97×) wider than the difference from the baseline (0.95×): "
        "all 3 runs were slower, but by how much this replay cannot say",
    ]


def test_per_request_runs_the_agents_choices_beside_the_same_server_with_fixed_settings(la_env) -> None:
    session_file, _ = record_session(la_env)
    out = la_env.workspace / "per-request"
    with (
        ScriptedModelServer(["warm"] + ["base"] * 4) as base,
        ScriptedModelServer(["warm"] + ["fixed"] * 4 + ["warm"] + ["chosen"] * 4, speculative=True) as spec,
    ):
        result = la_env.run(
            "bench", "--replay", str(session_file), "--base-url", f"base={base.url}", f"spec={spec.url}",
            "--per-request", "--runs", "1", "--out", str(out), timeout=300,
        )  # fmt: skip
        bodies = [body for body in spec.requests if body.get("messages")]
    assert result.code == 0, result.stderr
    fixed, chosen = bodies[1:5], bodies[6:10]
    assert not any("speculative.n_max" in body for body in fixed)
    # The agent's policy: drafting measured first, then one request without drafts to measure t0.
    assert "speculative.n_max" not in chosen[0] and chosen[1]["speculative.n_max"] == 0
    labels = [t["target"] for t in json.loads((out / "results.json").read_text())["replay_summary"]["totals"]]
    assert labels == ["base", "spec", "spec per-request"]
    refused = la_env.run("bench", "--per-request", "--profiles", "tiny")
    assert refused.code == 2 and "--per-request goes with --replay" in one_line_error(refused)
