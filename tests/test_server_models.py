"""Models from Hugging Face: llama.cpp's ``repo:QUANT`` shorthand, the shared Hugging Face cache,
offline use. The Hub is ours (tests/support/fake_hf_hub.py): real HTTP, tiny fake GGUF bytes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from server.errors import ModelError, ProfileError
from server.hf_quants import (
    HfShorthand,
    matches_quant,
    parse_shorthand,
    pick_model,
    quant_label,
    split_parts,
)
from server.models import ModelDirs, resolve_model, resolve_models
from server.profile_loading import load_profiles
from server.profiles import BUILTIN_PROFILES, ModelSource, Profile
from tests.support.fake_hf_hub import COMMIT, FakeHub, gguf_bytes

ROOT = Path(__file__).resolve().parents[1]
REPO = "acme/tiny-GGUF"
FILES = [
    ".gitattributes",
    "README.md",
    "tiny-Q4_K.gguf",
    "tiny-Q4_K_M.gguf",
    "tiny-UD-Q4_K_XL.gguf",
    "tiny-Q8_0.gguf",
    "tiny-IQ4_XS.gguf",
    "mmproj-tiny-Q8_0.gguf",
    "BF16/tiny-BF16-00001-of-00002.gguf",
    "BF16/tiny-BF16-00002-of-00002.gguf",
    "tiny-Q6_K-00001-of-00003.gguf",
    "tiny-Q6_K-00002-of-00003.gguf",
    "tiny-Q6_K-00003-of-00003.gguf",
]
TWINS = "acme/twins-GGUF"  # two files of one quant
TWIN_FILES = ["twins-Q4_K_M.gguf", "twins-UD-Q4_K_M.gguf", "twins-Q5_K_M.gguf"]
ONLY_Q5 = "acme/only-q5-GGUF"  # no default quant: llama.cpp falls back to the first GGUF
ONLY_Q5_FILES = ["only-Q5_K_S.gguf", "only-Q5_K_M.gguf"]


# -- the shorthand and the quant match (no network) ---------------------------------------------


def test_the_shorthand_parses_like_llama_cpp():
    assert parse_shorthand("unsloth/gemma-4-31B-it-GGUF:Q4_K_S") == HfShorthand("unsloth/gemma-4-31B-it-GGUF", "Q4_K_S")
    assert parse_shorthand("unsloth/gemma-4-31B-it-GGUF") == HfShorthand("unsloth/gemma-4-31B-it-GGUF", None)
    for bad in ("gemma", "a/b/c", "a/b:", "a/b:c:d", ":Q4_K_M", "a/b:Q4 K"):
        with pytest.raises(ValueError):
            parse_shorthand(bad)


@pytest.mark.parametrize(
    ("path", "quant", "matches"),
    [
        ("tiny-Q4_K_M.gguf", "Q4_K_M", True),
        ("tiny-Q4_K_M.gguf", "q4_k_m", True),  # any case
        ("tiny-q4_k_m.gguf", "Q4_K_M", True),
        ("tiny-Q4_K_M.gguf", "Q4_K", False),  # a whole token: Q4_K is not Q4_K_M
        ("tiny-Q4_K.gguf", "Q4_K", True),
        ("tiny-IQ4_XS.gguf", "Q4_XS", False),
        ("tiny-Q8_0.gguf", "Q8", False),
        ("tiny-UD-Q4_K_XL.gguf", "UD-Q4_K_XL", True),
        ("tiny-UD-Q4_K_XL.gguf", "Q4_K_XL", True),
        ("Q4_K_M/tiny-00001-of-00002.gguf", "Q4_K_M", True),  # the folder names the quant
        ("tiny-Q6_K-00001-of-00003.gguf", "Q6_K", True),
        ("gemma-4-31B-it-Q4_K_S.gguf", "Q4_K_S", True),
        ("gemma-4-31B-it-Q4_K_S.gguf", "gemma-4-31B-it-Q4_K_S.gguf", True),  # the whole name works too
    ],
)
def test_a_quant_matches_as_a_whole_token(path, quant, matches):
    assert matches_quant(path, quant) is matches


def test_split_files_list_every_part():
    assert split_parts("a/x-Q6_K-00002-of-00003.gguf") == [
        "a/x-Q6_K-00001-of-00003.gguf",
        "a/x-Q6_K-00002-of-00003.gguf",
        "a/x-Q6_K-00003-of-00003.gguf",
    ]
    assert split_parts("x-Q4_K_M.gguf") == ["x-Q4_K_M.gguf"]


def test_quant_labels_read_the_end_of_the_name():
    assert quant_label("tiny-Q4_K_M.gguf") == "Q4_K_M"
    assert quant_label("tiny-UD-Q4_K_XL.gguf") == "UD-Q4_K_XL"
    assert quant_label("BF16/tiny-bf16-00001-of-00002.gguf") == "BF16"
    assert quant_label("model.gguf") is None


def _pick(value: str, files=FILES) -> list[str]:
    return pick_model(files, parse_shorthand(value))


def test_pick_names_one_model_file():
    assert _pick(f"{REPO}:Q4_K_M") == ["tiny-Q4_K_M.gguf"]
    assert _pick(f"{REPO}:q4_k") == ["tiny-Q4_K.gguf"]
    assert _pick(f"{REPO}:UD-Q4_K_XL") == ["tiny-UD-Q4_K_XL.gguf"]
    # mmproj files are never the model, even when they carry the quant
    assert _pick(f"{REPO}:Q8_0") == ["tiny-Q8_0.gguf"]


def test_pick_takes_every_part_of_a_split_model_first_part_first():
    assert _pick(f"{REPO}:Q6_K") == [f"tiny-Q6_K-0000{i}-of-00003.gguf" for i in (1, 2, 3)]
    assert _pick(f"{REPO}:bf16") == ["BF16/tiny-BF16-00001-of-00002.gguf", "BF16/tiny-BF16-00002-of-00002.gguf"]


def test_pick_without_a_quant_follows_llama_cpp():
    assert _pick(REPO) == ["tiny-Q4_K_M.gguf"]
    assert _pick(REPO, [f for f in FILES if "Q4_K_M" not in f]) == ["tiny-Q8_0.gguf"]
    assert _pick(ONLY_Q5, ONLY_Q5_FILES) == ["only-Q5_K_M.gguf"]  # the first GGUF, sorted


def test_an_ambiguous_quant_is_one_line_naming_the_files():
    with pytest.raises(ProfileError) as caught:
        _pick(f"{TWINS}:Q4_K_M", TWIN_FILES)
    message = str(caught.value)
    assert "\n" not in message
    assert "twins-Q4_K_M.gguf" in message and "twins-UD-Q4_K_M.gguf" in message
    assert _pick(f"{TWINS}:UD-Q4_K_M", TWIN_FILES) == ["twins-UD-Q4_K_M.gguf"]
    with pytest.raises(ProfileError, match=r"^acme/twins-GGUF \(by default Q4_K_M\) matches 2 files"):
        _pick(TWINS, TWIN_FILES)


def test_a_missing_quant_is_one_line_listing_the_available_quants():
    with pytest.raises(ProfileError) as caught:
        _pick(f"{REPO}:Q3_K_S")
    message = str(caught.value)
    assert "\n" not in message
    assert "available quants: BF16, IQ4_XS, Q4_K, Q4_K_M, Q6_K, Q8_0, UD-Q4_K_XL" in message


def test_a_split_model_with_a_missing_part_is_an_error():
    with pytest.raises(ProfileError, match="tiny-Q6_K-00002-of-00003.gguf is missing"):
        _pick(f"{REPO}:Q6_K", [f for f in FILES if "00002-of-00003" not in f])
    with pytest.raises(ProfileError, match="no GGUF model files"):
        _pick(REPO, ["README.md", "mmproj-F16.gguf"])


# -- profiles ------------------------------------------------------------------------------------


def test_profiles_take_the_shorthand_for_the_model_and_the_draft():
    profiles = load_profiles(
        {
            "mine": {
                "extends": "gemma4-31b-dflash",  # its model is hf_repo + hf_file: replaced whole
                "model": {"hf": "unsloth/gemma-4-31B-it-GGUF:Q4_K_M"},
                "speculative": {"draft_model": {"hf": "Anbeeld/gemma-4-31B-it-DFlash-GGUF:Q8_0"}},
                "model_id": "gemma-4",
            }
        }
    )
    mine = profiles["mine"]
    assert mine.model == ModelSource(hf="unsloth/gemma-4-31B-it-GGUF:Q4_K_M")
    assert mine.model.describe() == "unsloth/gemma-4-31B-it-GGUF:Q4_K_M"
    assert mine.speculative.draft_model == ModelSource(hf="Anbeeld/gemma-4-31B-it-DFlash-GGUF:Q8_0")
    assert mine.speculative.cross_ctx == 1024  # the rest still merges key by key
    assert mine.model_id == "gemma-4"
    assert BUILTIN_PROFILES["gemma4-31b"].model_id is None


def test_a_bad_shorthand_is_one_line():
    with pytest.raises(ProfileError) as caught:
        load_profiles({"x": {"extends": "tiny", "model": {"hf": "gemma-4"}}})
    assert "\n" not in str(caught.value) and "owner/name[:QUANT]" in str(caught.value)
    with pytest.raises(ProfileError, match="exactly one"):
        load_profiles({"x": {"extends": "tiny", "model": {"hf": "a/b", "hf_repo": "a/b", "hf_file": "c"}}})


def test_the_builtin_gemma_profiles_name_the_same_files_as_before():
    main = BUILTIN_PROFILES["gemma4-31b"].model
    draft = BUILTIN_PROFILES["gemma4-31b-dflash"].speculative.draft_model
    assert (main.hf_repo, main.hf_file) == ("unsloth/gemma-4-31B-it-GGUF", "gemma-4-31B-it-Q4_K_S.gguf")
    assert draft is not None
    assert (draft.hf_repo, draft.hf_file) == ("Anbeeld/gemma-4-31B-it-DFlash-GGUF", "gemma4-31b-it-dflash-Q5_K_M.gguf")
    # The shorthand for them names the same files in listings like theirs.
    listing = ["gemma-4-31B-it-Q4_K_S.gguf", "gemma-4-31B-it-Q4_K_M.gguf"]
    assert _pick("unsloth/gemma-4-31B-it-GGUF:Q4_K_S", listing) == ["gemma-4-31B-it-Q4_K_S.gguf"]
    assert _pick("Anbeeld/gemma-4-31B-it-DFlash-GGUF:Q5_K_M", ["gemma4-31b-it-dflash-Q5_K_M.gguf"]) == [
        "gemma4-31b-it-dflash-Q5_K_M.gguf"
    ]


# -- the fake Hub --------------------------------------------------------------------------------


@pytest.fixture
def hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeHub]:
    from huggingface_hub import constants

    fake = FakeHub({REPO: FILES, TWINS: TWIN_FILES, ONLY_Q5: ONLY_Q5_FILES}).start()
    monkeypatch.setenv("HF_ENDPOINT", fake.url)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    # huggingface_hub fetches an "agent harnesses" registry once a day into HF_HOME: a fresh copy
    # in tmp keeps it off the network and out of the real home.
    registry = tmp_path / "agent_harnesses.json"
    registry.write_text(json.dumps({"standardEnvVars": [], "harnesses": {"none": {}}}))
    monkeypatch.setattr(constants, "AGENT_HARNESSES_PATH", str(registry))
    yield fake
    fake.stop()


@pytest.fixture
def dirs(tmp_path: Path) -> ModelDirs:
    return ModelDirs(models=tmp_path / "localagent-models", cache=tmp_path / "cache", hub_cache=tmp_path / "hf-hub")


def _snapshot(dirs: ModelDirs, repo: str = REPO) -> Path:
    assert dirs.hub_cache is not None
    return dirs.hub_cache / f"models--{repo.replace('/', '--')}" / "snapshots" / COMMIT


def _go_offline(hub: FakeHub, monkeypatch: pytest.MonkeyPatch) -> None:
    hub.stop()
    hub.requests.clear()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def test_a_shorthand_downloads_into_the_shared_cache_and_is_reused(hub: FakeHub, dirs: ModelDirs):
    path = resolve_model(ModelSource(hf=f"{REPO}:q6_k"), dirs)
    assert path == _snapshot(dirs) / "tiny-Q6_K-00001-of-00003.gguf"
    assert path.read_bytes() == gguf_bytes("tiny-Q6_K-00001-of-00003.gguf")
    parts = sorted(p.name for p in path.parent.glob("tiny-Q6_K-*"))
    assert parts == [f"tiny-Q6_K-0000{i}-of-00003.gguf" for i in (1, 2, 3)]
    assert len(hub.downloads()) == 3 and hub.listings() == 1
    hub.requests.clear()
    assert resolve_model(ModelSource(hf=f"{REPO}:Q6_K"), dirs) == path
    assert hub.requests == []  # cached: the Hub is not even asked


def test_files_in_a_subfolder_come_with_their_folder(hub: FakeHub, dirs: ModelDirs):
    path = resolve_model(ModelSource(hf=f"{REPO}:BF16"), dirs)
    assert path == _snapshot(dirs) / "BF16" / "tiny-BF16-00001-of-00002.gguf"
    assert (path.parent / "tiny-BF16-00002-of-00002.gguf").is_file()


def test_exact_files_use_the_shared_cache_too(hub: FakeHub, dirs: ModelDirs):
    source = ModelSource(hf_repo=REPO, hf_file="tiny-Q8_0.gguf")
    path = resolve_model(source, dirs)
    assert path == _snapshot(dirs) / "tiny-Q8_0.gguf" and hub.downloads() == [f"/{REPO}/resolve/main/tiny-Q8_0.gguf"]
    hub.requests.clear()
    assert resolve_model(source, dirs) == path and hub.requests == []


def test_a_file_another_tool_downloaded_is_not_fetched_again(hub: FakeHub, dirs: ModelDirs):
    from huggingface_hub import hf_hub_download

    # What llama.cpp's -hf, transformers or `hf download` leave behind: the same cache layout.
    hf_hub_download(REPO, "tiny-Q4_K_M.gguf", cache_dir=dirs.hub_cache, endpoint=hub.url)
    hub.requests.clear()
    theirs = _snapshot(dirs) / "tiny-Q4_K_M.gguf"
    assert resolve_model(ModelSource(hf=REPO), dirs) == theirs
    assert resolve_model(ModelSource(hf_repo=REPO, hf_file="tiny-Q4_K_M.gguf"), dirs) == theirs
    assert hub.requests == []


def test_a_file_in_localagents_own_folder_is_still_used(hub: FakeHub, dirs: ModelDirs):
    dirs.models.mkdir(parents=True)
    old = dirs.models / "tiny-Q8_0.gguf"
    old.write_bytes(b"downloaded by an older localagent")
    assert resolve_model(ModelSource(hf_repo=REPO, hf_file="tiny-Q8_0.gguf"), dirs) == old
    assert hub.requests == []
    assert resolve_model(ModelSource(hf=f"{REPO}:Q8_0"), dirs) == old
    assert hub.downloads() == []  # only the listing, to learn the name


def test_offline_from_the_cache(hub: FakeHub, dirs: ModelDirs, monkeypatch: pytest.MonkeyPatch):
    split = resolve_model(ModelSource(hf=f"{REPO}:Q6_K"), dirs)
    q8 = resolve_model(ModelSource(hf=f"{REPO}:Q8_0"), dirs)
    exact = resolve_model(ModelSource(hf_repo=REPO, hf_file="tiny-Q4_K.gguf"), dirs)
    _go_offline(hub, monkeypatch)
    assert resolve_model(ModelSource(hf=f"{REPO}:Q6_K"), dirs) == split
    assert resolve_model(ModelSource(hf=f"{REPO}:q8_0"), dirs) == q8
    assert resolve_model(ModelSource(hf=REPO), dirs) == q8  # no Q4_K_M cached: llama.cpp's next choice
    assert resolve_model(ModelSource(hf_repo=REPO, hf_file="tiny-Q4_K.gguf"), dirs) == exact
    assert hub.requests == []


def test_offline_and_not_cached_is_one_line(hub: FakeHub, dirs: ModelDirs, monkeypatch: pytest.MonkeyPatch):
    resolve_model(ModelSource(hf=f"{REPO}:Q8_0"), dirs)
    _go_offline(hub, monkeypatch)
    exact = ModelSource(hf_repo=REPO, hf_file="tiny-Q4_K_M.gguf")
    # another quant of a cached repository, a repository never fetched, an exact file
    for source in (ModelSource(hf=f"{REPO}:Q4_K_M"), ModelSource(hf=f"{TWINS}:Q5_K_M"), exact):
        with pytest.raises(ModelError) as caught:
            resolve_model(source, dirs)
        message = str(caught.value)
        assert "\n" not in message and "HF_HUB_OFFLINE" in message and "hf download" in message
    with pytest.raises(ModelError, match=r"it has Q8_0"):
        resolve_model(ModelSource(hf=f"{REPO}:Q4_K_M"), dirs)


def test_an_unreachable_hub_falls_back_to_the_cache(hub: FakeHub, dirs: ModelDirs):
    q8 = resolve_model(ModelSource(hf=f"{REPO}:Q8_0"), dirs)
    hub.stop()  # no HF_HUB_OFFLINE: the listing fails, the cache answers
    assert resolve_model(ModelSource(hf=REPO), dirs) == q8
    with pytest.raises(ModelError, match="cannot list acme/tiny-GGUF on the Hub"):
        resolve_model(ModelSource(hf=f"{REPO}:BF16"), dirs)


def test_ambiguous_and_missing_quants_through_the_hub(hub: FakeHub, dirs: ModelDirs):
    with pytest.raises(ProfileError, match=r"matches 2 files \(twins-Q4_K_M.gguf, twins-UD-Q4_K_M.gguf\)"):
        resolve_model(ModelSource(hf=f"{TWINS}:Q4_K_M"), dirs)
    with pytest.raises(ProfileError, match="available quants: Q4_K_M, Q5_K_M, UD-Q4_K_M"):
        resolve_model(ModelSource(hf=f"{TWINS}:Q2_K"), dirs)
    assert resolve_model(ModelSource(hf=ONLY_Q5), dirs).name == "only-Q5_K_M.gguf"
    with pytest.raises(ModelError, match="acme/nope-GGUF"):
        resolve_model(ModelSource(hf="acme/nope-GGUF:Q4_K_M"), dirs)
    assert len(hub.downloads()) == 1


def test_a_dry_run_downloads_and_writes_nothing(hub: FakeHub, dirs: ModelDirs):
    profile = Profile(
        name="p",
        model={"hf": f"{REPO}:Q6_K"},
        speculative={"type": "draft", "draft_model": {"hf_repo": REPO, "hf_file": "tiny-Q4_K.gguf"}},
    )
    models = resolve_models(profile, dirs, fetch=False)
    assert models.model == _snapshot(dirs) / "tiny-Q6_K-00001-of-00003.gguf"
    assert models.draft is not None and models.draft.name == "tiny-Q4_K.gguf"
    assert hub.downloads() == [] and hub.listings() == 1  # the shorthand's name needs the listing
    assert dirs.hub_cache is not None and not dirs.hub_cache.exists()


def test_the_environment_picks_the_cache_and_progress_goes_to_stderr(hub: FakeHub, tmp_path: Path):
    """A fresh process, as the CLI runs: HF_HOME (or HF_HUB_CACHE) read by huggingface_hub itself."""
    code = (
        "from pathlib import Path\n"
        "from server.models import ModelDirs, resolve_model\n"
        "from server.profiles import ModelSource\n"
        f"print(resolve_model(ModelSource(hf={REPO + ':Q8_0'!r}), ModelDirs(Path('m'), Path('c'))))\n"
    )
    env = {key: value for key, value in os.environ.items() if not key.startswith(("HF_", "HUGGINGFACE_"))}
    env.update(HF_HOME=str(tmp_path / "hf-home"), HF_ENDPOINT=hub.url, TQDM_POSITION="-1")  # a bar even off a tty
    elsewhere = tmp_path / "elsewhere"
    for extra, cache in (({}, tmp_path / "hf-home" / "hub"), ({"HF_HUB_CACHE": str(elsewhere)}, elsewhere)):
        run = subprocess.run(
            [sys.executable, "-c", code],
            env={**env, **extra},
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert run.returncode == 0, run.stderr
        expected = cache / f"models--{REPO.replace('/', '--')}" / "snapshots" / COMMIT / "tiny-Q8_0.gguf"
        assert run.stdout == f"{expected}\n"  # stdout carries only the answer
        assert "tiny-Q8_0.gguf" in run.stderr and "100%" in run.stderr
    assert len(hub.downloads()) == 2
