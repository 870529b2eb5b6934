"""``localagent bench``: prompts, statistics, the config writer, the sweep grid, bad input, a server
that fails mid-run, and real benchmarks of the tiny profiles on the real llama-server."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import httpx2
import pytest

from localagent.bench.formatting import fmt_pct
from server.bench import sweep
from server.bench.client import _Mark, normalize_base_url, observed_rates
from server.bench.configfile import save_profile_settings
from server.bench.prompts import DEFAULT_PROMPTS, load_prompts
from server.bench.results import RequestResult, TargetResult
from server.bench.summary import OVERALL, summarize
from server.errors import BenchInputError
from server.profile_loading import load_profiles
from server.profiles import BUILTIN_PROFILES
from server.telemetry import RequestTimings, parse_metrics
from tests.support.scripted_model import ScriptedModelServer, ScriptedTurn

RECIPE_PROMPTS = [
    (
        "Write a complete Python task store module. Include a Task dataclass, TaskStatus enum, TaskStore class, "
        "add_task, update_task, delete_task, search_tasks, filter_by_status, export_to_json, get_all_tasks, and 5 "
        "tests. Return only one complete Python file."
    ),
    (
        "Write a complete Python key-value report module. Include a KeyValueStore class, set, get, delete, exists, "
        "list_keys, filter_by_prefix, export_to_json, load_from_json, and a generate_report function that returns "
        "total keys, empty values, prefix counts, and largest value length. Include 5 tests. Return only one "
        "complete Python file."
    ),
    (
        "Write a complete Python doubly linked list module. Include a Node dataclass, DoublyLinkedList class, "
        "append, prepend, delete, find, reverse, to_list, from_list, clear, and 5 tests. Return only one complete "
        "Python file."
    ),
]


def one_line_error(result) -> str:
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    return lines[0]


def write_prompts(directory: Path, *prompts: str) -> Path:
    path = directory / "prompts.txt"
    path.write_text("\n---\n".join(prompts) + "\n")
    return path


# -- prompts ----------------------------------------------------------------------------------------


def test_default_prompts_are_the_recipes_three_verbatim_plus_a_prose_prompt() -> None:
    assert [p.text for p in DEFAULT_PROMPTS[:3]] == RECIPE_PROMPTS
    assert [p.kind for p in DEFAULT_PROMPTS] == ["code", "code", "code", "prose"]
    assert "Mixture of Experts" in DEFAULT_PROMPTS[3].text


def test_prompts_file_as_text_and_as_json(tmp_path: Path) -> None:
    text = tmp_path / "p.txt"
    text.write_text("first prompt\nsecond line\n---\n\n---\nsecond prompt\n")
    prompts = load_prompts(text)
    assert [(p.name, p.text) for p in prompts] == [
        ("prompt-1", "first prompt\nsecond line"),
        ("prompt-2", "second prompt"),
    ]

    as_json = tmp_path / "p.json"
    as_json.write_text(json.dumps(["plain", {"name": "named", "prompt": "with a name"}]))
    assert [(p.name, p.text) for p in load_prompts(as_json)] == [("prompt-1", "plain"), ("named", "with a name")]


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("p.txt", "", "has no prompts"),
        ("p.txt", "\n---\n  \n", "has no prompts"),
        ("p.json", "[]", "has no prompts"),
        ("p.json", "[1]", "item 1 is int"),
        ("p.json", '{"a": 1}', "not a list"),
        ("p.json", "[", "not valid JSON"),
        ("p.json", '[{"name": "a", "prompt": "x"}, {"name": "a", "prompt": "y"}]', "used twice"),
    ],
)
def test_bad_prompts_files_are_one_line_usage_errors(tmp_path: Path, name: str, content: str, message: str) -> None:
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(BenchInputError, match=message):
        load_prompts(path)


# -- the figures ------------------------------------------------------------------------------------


def row(prompt: str, run: int, tps: float, drafted: int | None = None, accepted: int | None = None) -> RequestResult:
    return RequestResult(
        prompt=prompt,
        run=run,
        server_tps=tps,
        client_tps=tps * 0.99,
        server_window_tps=tps,
        completion_tokens=100,
        gen_seconds=100 / tps,
        draft_n=drafted,
        draft_accepted=accepted,
    )


def test_summary_takes_medians_speedups_against_the_first_and_shows_no_drafts_as_dash() -> None:
    base = TargetResult(
        "base", "profile", requests=[row("a", 1, 40), row("a", 2, 44), row("a", 3, 42), row("b", 1, 40)]
    )
    fast = TargetResult(
        "fast",
        "profile",
        requests=[
            row("a", 1, 120, 100, 80),
            row("a", 2, 130, 100, 70),
            row("a", 3, 126, 100, 90),
            RequestResult(prompt="b", run=1, ok=False, error="the server died"),
        ],
    )
    summary = summarize([base, fast], ["a", "b"])
    a_base, a_fast = summary.cell("base", "a"), summary.cell("fast", "a")
    assert a_base is not None and a_fast is not None
    assert a_base.server_tps == 42 and a_base.speedup == 1.0
    assert a_base.acceptance is None and fmt_pct(a_base.acceptance) == "-"
    assert a_fast.server_tps == 126 and a_fast.speedup == pytest.approx(3.0)
    assert a_fast.acceptance == pytest.approx(240 / 300)
    b_fast = summary.cell("fast", "b")
    assert b_fast is not None and b_fast.runs_failed == 1 and b_fast.server_tps is None and b_fast.speedup is None
    overall = summary.cell("fast", OVERALL)
    assert overall is not None and overall.runs_ok == 3 and overall.runs_failed == 1
    assert summary.overhead_ratio == pytest.approx(0.99)
    assert summary.overhead_ok


def test_client_rate_counts_the_same_tokens_over_the_same_window_as_the_server() -> None:
    # The server held its first 5 tokens back (stop-string check): the window starts where they arrived.
    first = _Mark(10.0, RequestTimings(predicted_n=5, predicted_ms=100.0))
    last = _Mark(11.0, RequestTimings(predicted_n=105, predicted_ms=1090.0))
    client_tps, server_tps = observed_rates(105, first, last)
    assert client_tps == pytest.approx(100 / 1.0)
    assert server_tps == pytest.approx(100 / 0.99)
    # Without per-chunk timings all tokens count over the client's window.
    assert observed_rates(50, _Mark(1.0, None), _Mark(2.0, None)) == (50.0, None)
    assert observed_rates(50, _Mark(1.0, None), _Mark(1.0, None)) == (None, None)


def test_base_urls_are_normalised() -> None:
    assert normalize_base_url("http://h:1/v1/") == "http://h:1"
    assert normalize_base_url("http://h:1/v1/chat/completions") == "http://h:1"


# -- sweep grid and saving -------------------------------------------------------------------------


def test_sweep_grids_and_variants() -> None:
    tiny = BUILTIN_PROFILES["tiny"]
    variants, profiles = sweep.build_variants(tiny, sweep.default_grid("ngram-mod"))
    assert variants[0].label == sweep.CURRENT and variants[0].name == "tiny"
    assert len(variants) == 1 + len(sweep.NGRAM_MOD_POINTS)
    variant = profiles[variants[1].name]
    assert variant.speculative.type == "ngram-mod"
    assert (variant.speculative.ngram_n_min, variant.speculative.ngram_n_max) == (4, 16)
    # A minimum above the maximum is skipped, not sent to the server.
    grid = sweep.parse_grid(["ngram_n_min=8,64", "ngram-n-max=32"], "ngram-mod")
    assert grid == [{"ngram_n_min": 8, "ngram_n_max": 32}, {"ngram_n_min": 64, "ngram_n_max": 32}]
    assert len(sweep.build_variants(tiny, grid)[0]) == 2
    assert len(sweep.default_grid("dflash")) == 6
    with pytest.raises(BenchInputError, match="keys are"):
        sweep.parse_grid(["p_min=0.5"], "ngram-mod")
    with pytest.raises(BenchInputError, match="no speculative decoding"):
        sweep.check_sweepable(BUILTIN_PROFILES["tiny-baseline"])


def test_save_keeps_the_users_other_settings_and_comments(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(
        '# mine\n[server]\nport = 9000  # keep\n\n[profiles.tiny]\nextends = "tiny"\nctx_size = 4096\n\n'
        '[profiles.tiny.speculative]\nngram_n_match = 12\n\n# the big one\n[profiles.big]\nmodel = "/m.gguf"\n'
    )
    message = save_profile_settings(config, "tiny", "speculative", {"ngram_n_min": 8, "ngram_n_max": 32})
    assert "ngram_n_min = 8" in message
    text = config.read_text()
    assert "# mine" in text and "port = 9000  # keep" in text and "# the big one" in text
    data = tomllib.loads(text)
    assert data["server"] == {"port": 9000}
    assert data["profiles"]["big"] == {"model": "/m.gguf"}
    assert data["profiles"]["tiny"] == {
        "extends": "tiny",
        "ctx_size": 4096,
        "speculative": {"ngram_n_match": 12, "ngram_n_min": 8, "ngram_n_max": 32},
    }
    tuned = load_profiles(data["profiles"])["tiny"]
    assert tuned.speculative.type == "ngram-mod" and tuned.speculative.ngram_n_max == 32 and tuned.ctx_size == 4096


def test_save_into_a_new_file_extends_the_builtin_profile(tmp_path: Path) -> None:
    config = tmp_path / "new" / "config.toml"
    save_profile_settings(config, "tiny-dflash", "speculative", {"n_max": 8, "p_min": 0.5})
    data = tomllib.loads(config.read_text())
    assert data == {"profiles": {"tiny-dflash": {"extends": "tiny-dflash", "speculative": {"n_max": 8, "p_min": 0.5}}}}
    with pytest.raises(BenchInputError, match="not defined"):
        save_profile_settings(config, "nowhere", "speculative", {"n_max": 8})


def test_save_edits_an_inline_profile_table_in_place(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[profiles]\ntiny = { extends = "tiny", ctx_size = 2048 }  # short form\n')
    save_profile_settings(config, "tiny", "speculative", {"ngram_n_min": 8})
    text = config.read_text()
    assert "# short form" in text
    assert tomllib.loads(text)["profiles"]["tiny"] == {
        "extends": "tiny",
        "ctx_size": 2048,
        "speculative": {"ngram_n_min": 8},
    }


def test_save_refuses_values_that_would_break_the_config(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    original = '[profiles.tiny]\nextends = "tiny"\n'
    config.write_text(original)
    with pytest.raises(BenchInputError, match="not saved"):
        save_profile_settings(config, "tiny", "speculative", {"n_max": 0})
    assert config.read_text() == original


# -- bad input: one line, exit 2, before anything runs ------------------------------------------


def test_unknown_profile_is_one_line(la_env) -> None:
    result = la_env.run("bench", "--profiles", "tiny", "no-such-profile")
    assert result.code == 2
    assert "unknown profile 'no-such-profile'" in one_line_error(result)


def test_unreachable_url_is_one_line(la_env) -> None:
    result = la_env.run("bench", "--base-url", "http://127.0.0.1:9")
    assert result.code == 2
    assert "cannot reach http://127.0.0.1:9" in one_line_error(result)


def test_empty_prompts_file_is_one_line(la_env) -> None:
    (la_env.workspace / "empty.txt").write_text("\n---\n")
    result = la_env.run("bench", "--profiles", "tiny", "--prompts", "empty.txt")
    assert result.code == 2
    assert "has no prompts" in one_line_error(result)
    assert not (la_env.workspace / "bench-results").exists()


# -- a server that fails mid-run --------------------------------------------------------------------


def test_url_server_failing_mid_run_marks_rows_failed_and_still_writes_the_report(la_env) -> None:
    answer = "def add(a, b):\n    return a + b\n" * 4
    turns = [
        ScriptedTurn(text="Hello."),  # warm-up
        ScriptedTurn(text=answer, chunk_size=4),
        ScriptedTurn(text=answer, chunk_size=4, die_midstream=True, die_after_chunks=4),
        ScriptedTurn(text=answer, chunk_size=4),
    ]
    prompts = write_prompts(la_env.workspace, "Write add().")
    out = la_env.workspace / "out"
    with ScriptedModelServer(turns, speculative=True) as srv:
        result = la_env.run(
            "bench",
            "--base-url",
            f"scripted={srv.url}/v1",
            "--prompts",
            str(prompts),
            "--runs",
            "3",
            "--max-tokens",
            "64",
            "--out",
            str(out),
        )
        bodies = list(srv.requests)
    assert result.code == 1, result.stderr
    assert "1 of 3 requests failed" in one_line_error(result)
    assert [b["seed"] for b in bodies[1:]] == [42, 43, 44]
    assert all(b["stream"] and b["timings_per_token"] and b["top_k"] == 64 for b in bodies)
    data = json.loads((out / "results.json").read_text())
    [target] = data["results"]["targets"]
    assert target["label"] == "scripted" and target["kind"] == "url"
    assert [r["ok"] for r in target["requests"]] == [True, False, True]
    assert "broke mid-answer" in target["requests"][1]["error"]
    assert target["requests"][0]["acceptance"] == pytest.approx(0.75, abs=0.05)
    report = (out / "report.md").read_text()
    assert "## Failed requests" in report and "| scripted | prompt-1 | 2 |" in report
    assert (out / "chart.png").read_bytes().startswith(b"\x89PNG")


# -- the real llama-server ---------------------------------------------------------------------------


@pytest.mark.server
def test_bench_tiny_baseline_against_tiny_writes_json_report_and_chart(la_env, llama_server_binary) -> None:
    prompts = write_prompts(
        la_env.workspace,
        "Write a Python function that returns the sum of a list, with a test.",
        "Write two sentences about the sea.",
    )
    out = la_env.workspace / "out"
    result = la_env.run(
        "bench",
        "--profiles",
        "tiny-baseline",
        "tiny",
        "--runs",
        "1",
        "--max-tokens",
        "32",
        "--prompts",
        str(prompts),
        "--out",
        str(out),
        timeout=300,
    )
    assert result.code == 0, result.stderr
    assert "tiny-baseline" in result.stdout and "runtime overhead" in result.stdout

    data = json.loads((out / "results.json").read_text())
    results = data["results"]
    assert [t["label"] for t in results["targets"]] == ["tiny-baseline", "tiny"]
    assert results["machine"]["cpu_count"] >= 1 and results["binary"]
    for target in results["targets"]:
        assert target["command"].startswith(str(llama_server_binary)) and "--metrics" in target["command"]
        assert target["metrics"] is not None and target["metrics"]["tokens_predicted"] > 0
        assert [r["prompt"] for r in target["requests"]] == ["prompt-1", "prompt-2"]
        for request in target["requests"]:
            assert request["ok"], request
            assert request["completion_tokens"] > 0 and request["prompt_tokens"] > 0
            assert request["server_tps"] > 0 and request["client_tps"] > 0 and request["gen_seconds"] > 0
            assert 0.5 < request["overhead_ratio"] < 1.5
    baseline = results["targets"][0]
    assert "--spec-type" not in baseline["command"]
    assert all(r["draft_n"] is None and r["acceptance"] is None for r in baseline["requests"])
    assert "--spec-type ngram-mod" in results["targets"][1]["command"]
    summary = data["summary"]
    assert summary["targets"] == ["tiny-baseline", "tiny"] and summary["overhead_ratio"] > 0

    report = (out / "report.md").read_text()
    assert "| **overall** | tiny |" in report and "## Runtime overhead" in report
    assert "## Machine" in report and "--spec-type ngram-mod" in report
    assert (out / "chart.png").read_bytes().startswith(b"\x89PNG")
    assert "<svg" in (out / "chart.svg").read_text()


@pytest.mark.server
def test_managed_server_killed_mid_run_fails_its_rows_and_the_report_is_written(la_env, llama_server_binary) -> None:
    prompts = write_prompts(la_env.workspace, "Write a long Python module with many small functions and tests.")
    out = la_env.workspace / "out"
    bench = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "localagent.cli",
            "bench",
            "--profiles",
            "tiny-baseline",
            "--runs",
            "3",
            "--max-tokens",
            "400",
            "--prompts",
            str(prompts),
            "--out",
            str(out),
        ],
        env=la_env.env,
        cwd=la_env.workspace,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        record = None
        deadline = time.monotonic() + 120
        while record is None and time.monotonic() < deadline and bench.poll() is None:
            record = next((r for r in la_env.status() if r["state"] == "ready" and r["server_pid"]), None)
            time.sleep(0.5)
        assert record is not None, "the bench never started its server"
        metrics_url = f"http://127.0.0.1:{record['port']}/metrics"
        # Once the warm-up has been counted the measured runs (400 tokens each) are under way.
        while time.monotonic() < deadline and parse_metrics(httpx2.get(metrics_url).text).tokens_predicted_total == 0:
            time.sleep(0.2)
        time.sleep(1)
        os.kill(record["server_pid"], signal.SIGKILL)
        _stdout, stderr = bench.communicate(timeout=120)
    finally:
        if bench.poll() is None:
            bench.kill()
    assert bench.returncode == 1, stderr
    assert "requests failed" in stderr and "Traceback" not in stderr
    data = json.loads((out / "results.json").read_text())
    [target] = data["results"]["targets"]
    assert not target["requests"][-1]["ok"]
    assert not any("warm-up" in note for note in target["notes"])
    assert any("went down" in note for note in target["notes"])
    assert "## Failed requests" in (out / "report.md").read_text()
    assert (out / "chart.png").is_file()


@pytest.mark.server
def test_sweep_tries_the_grid_and_save_writes_the_winner(la_env, llama_server_binary) -> None:
    prompts = write_prompts(la_env.workspace, "Write a Python function that reverses a string, with a test.")
    out = la_env.workspace / "sweep"
    result = la_env.run(
        "bench",
        "--sweep",
        "--profiles",
        "tiny",
        "--grid",
        "ngram_n_min=8",
        "ngram_n_max=16",
        "--runs",
        "1",
        "--max-tokens",
        "48",
        "--prompts",
        str(prompts),
        "--out",
        str(out),
        "--save",
        timeout=300,
    )
    assert result.code == 0, result.stderr
    assert "fastest on this machine" in result.stdout
    data = json.loads((out / "results.json").read_text())["results"]
    assert [t["label"] for t in data["targets"]] == ["current", "ngram_n_min=8 ngram_n_max=16"]
    assert "--spec-ngram-mod-n-max 16" in data["targets"][1]["command"]
    best = data["sweep"]["best_settings"]
    config = la_env.home / "config" / "config.toml"
    if best:
        saved = tomllib.loads(config.read_text())["profiles"]["tiny"]
        assert saved == {"extends": "tiny", "speculative": best}
    else:
        assert not config.exists()
    assert "## Sweep" in (out / "report.md").read_text()
