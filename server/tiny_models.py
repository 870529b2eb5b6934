"""Tiny generated GGUF models that drive llama-server's real DFlash code path on a CPU.

A DFlash *target* (architecture ``llama``) and a matching DFlash *draft* (architecture
``dflash``) are written with the ``gguf`` package and numpy, reusing the first tokens of the
real Gemma 3 270M vocabulary so prompts tokenise like a real model. They start in well under
a second and make llama-server report real ``draft_n`` / ``draft_n_accepted`` numbers; the
text they produce is meaningless.

"echo" weights make drafts genuinely accepted: the target always repeats its last token and
the draft always predicts its anchor token (see the notes in ``_echo_*`` below).
"""

from __future__ import annotations

import hashlib
import json
import os
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
from gguf import GGUFWriter

from server.tiny_tokenizer import (
    DEFAULT_VOCAB_KEEP,
    MIN_VOCAB_KEEP,
    TinyModelError,
    TokenizerData,
    read_gemma_tokenizer,
    vocab_keep_problem,
)

__all__ = [
    "MIN_VOCAB_KEEP",
    "TinyDFlashSpec",
    "TinyModelError",
    "TinyModelPaths",
    "TokenizerData",
    "ensure_tiny_dflash_pair",
    "read_gemma_tokenizer",
    "tiny_chat_template",
    "write_tiny_dflash_pair",
]

# Part of every file-name hash: bump it whenever the generated files change, so caches made
# by an older version of this module are not reused.
_FORMAT_VERSION = 1

_MASK_TOKEN = "<mask>"
_RMS_EPS = 1e-6
_ROPE_FREQ_BASE = 10000.0
_RANDOM_STD = 0.02
# Echo needs near one-hot logits so that the server's default sampler (temperature 0.8,
# top-k 40) still picks the repeated token: unit-variance embedding rows give the own row a
# logit margin of ~38 over the best other row of a 1024-token vocab at width 64.
_ECHO_EMBED_STD = 1.0

Weights = Literal["echo", "random"]


@dataclass(frozen=True)
class TinyDFlashSpec:
    """Sizes of the tiny target/draft pair; every field takes part in the file names."""

    embedding: int = 64
    blocks: int = 4
    ff: int = 128
    heads: int = 4
    kv_heads: int = 2
    head_size: int = 16
    context: int = 4096
    vocab_keep: int = DEFAULT_VOCAB_KEEP
    target_layers: tuple[int, ...] = (1, 3)
    block_size: int = 16
    weights: Weights = "echo"
    seed: int = 0

    def __post_init__(self) -> None:
        # A tuple keeps the spec hashable even when a caller passes a list.
        object.__setattr__(self, "target_layers", tuple(int(i) for i in self.target_layers))
        problems = _spec_problems(self)
        if problems:
            raise ValueError("invalid TinyDFlashSpec: " + "; ".join(problems))


def _spec_problems(spec: TinyDFlashSpec) -> list[str]:
    vocab_problem = vocab_keep_problem(spec.vocab_keep)
    problems: list[str] = [vocab_problem] if vocab_problem else []
    if spec.heads * spec.head_size != spec.embedding:
        # The echo draft needs identity attn_v/attn_output, which must be square.
        problems.append(f"heads*head_size ({spec.heads}*{spec.head_size}) must equal embedding ({spec.embedding})")
    if spec.kv_heads < 1 or spec.heads % spec.kv_heads != 0:
        problems.append(f"heads ({spec.heads}) must be a multiple of kv_heads ({spec.kv_heads})")
    if spec.head_size % 2 != 0:
        problems.append(f"head_size ({spec.head_size}) must be even for RoPE")
    if not spec.target_layers:
        problems.append("target_layers must not be empty")
    if any(not 0 <= i < spec.blocks for i in spec.target_layers):
        problems.append(f"target_layers {spec.target_layers} must lie in [0, {spec.blocks})")
    if len(set(spec.target_layers)) != len(spec.target_layers):
        problems.append(f"target_layers {spec.target_layers} must be distinct")
    if spec.block_size < 2:
        problems.append(f"block_size ({spec.block_size}) must be at least 2")
    if spec.weights not in ("echo", "random"):
        problems.append(f"weights must be 'echo' or 'random', not {spec.weights!r}")
    if min(spec.embedding, spec.blocks, spec.ff, spec.heads, spec.context) < 1:
        problems.append("sizes must be positive")
    return problems


@dataclass(frozen=True)
class TinyModelPaths:
    target: Path
    draft: Path


# --------------------------------------------------------------------------- chat template

# Gemma's turn format. The system prompt is folded into the first turn because Gemma has no
# system role; tool results go into user turns for the same reason. The leading BOS is what
# Gemma's own template emits; llama-server strips it when the model adds BOS itself.
_CHAT_TEMPLATE = """{{- bos_token -}}
{%- if messages and messages[0]['role'] == 'system' -%}
{%- set system = messages[0]['content'] if messages[0]['content'] is string else '' -%}
{%- set loop_messages = messages[1:] -%}
{%- else -%}
{%- set system = '' -%}
{%- set loop_messages = messages -%}
{%- endif -%}
{%- if system and not loop_messages -%}
{{- '<start_of_turn>user\\n' + system | trim + '<end_of_turn>\\n' -}}
{%- endif -%}
{%- for message in loop_messages -%}
{%- set role = 'model' if message['role'] == 'assistant' else ('user' if message['role'] in ['tool', 'system'] else message['role']) -%}
{{- '<start_of_turn>' + role + '\\n' -}}
{%- if loop.first and system -%}{{- system | trim + '\\n\\n' -}}{%- endif -%}
{%- if message['content'] is string -%}
{{- message['content'] | trim -}}
{%- elif message['content'] is not none -%}
{%- for part in message['content'] -%}{%- if part['type'] == 'text' -%}{{- part['text'] | trim -}}{%- endif -%}{%- endfor -%}
{%- endif -%}
{{- '<end_of_turn>\\n' -}}
{%- endfor -%}
{%- if add_generation_prompt -%}
{{- '<start_of_turn>model\\n' -}}
{%- endif -%}
"""


def tiny_chat_template() -> str:
    """The Gemma-style jinja chat template written into the tiny target."""
    return _CHAT_TEMPLATE


# --------------------------------------------------------------------------- weights

Tensors = dict[str, np.ndarray]


def _normal(rng: np.random.Generator, shape: tuple[int, ...], std: float = _RANDOM_STD) -> np.ndarray:
    return (rng.standard_normal(shape) * std).astype(np.float32)


def _ones(n: int) -> np.ndarray:
    return np.ones(n, dtype=np.float32)


def _zeros(shape: tuple[int, ...]) -> np.ndarray:
    return np.zeros(shape, dtype=np.float32)


def _eye(n: int) -> np.ndarray:
    return np.eye(n, dtype=np.float32)


def _target_tensors(spec: TinyDFlashSpec, n_vocab: int, mask_id: int, rng: np.random.Generator) -> Tensors:
    # numpy shapes are ggml's ne reversed: (out_features, in_features).
    echo = spec.weights == "echo"
    n_q, n_kv = spec.heads * spec.head_size, spec.kv_heads * spec.head_size
    embd = _normal(rng, (n_vocab, spec.embedding), _ECHO_EMBED_STD if echo else _RANDOM_STD)
    if echo:
        # A zero <mask> row keeps mask positions out of the draft's attention values.
        embd[mask_id] = 0.0
    tensors: Tensors = {"token_embd.weight": embd, "output_norm.weight": _ones(spec.embedding)}
    for i in range(spec.blocks):
        p = f"blk.{i}."
        tensors[p + "attn_norm.weight"] = _ones(spec.embedding)
        tensors[p + "attn_q.weight"] = _normal(rng, (n_q, spec.embedding))
        tensors[p + "attn_k.weight"] = _normal(rng, (n_kv, spec.embedding))
        tensors[p + "attn_v.weight"] = _normal(rng, (n_kv, spec.embedding))
        out = _normal(rng, (spec.embedding, n_q))
        # Echo: no block writes to the residual stream, so the hidden state stays the input
        # token's embedding and the tied output head predicts that same token again.
        tensors[p + "attn_output.weight"] = _zeros(out.shape) if echo else out
        tensors[p + "ffn_norm.weight"] = _ones(spec.embedding)
        tensors[p + "ffn_gate.weight"] = _normal(rng, (spec.ff, spec.embedding))
        tensors[p + "ffn_up.weight"] = _normal(rng, (spec.ff, spec.embedding))
        down = _normal(rng, (spec.embedding, spec.ff))
        tensors[p + "ffn_down.weight"] = _zeros(down.shape) if echo else down
    return tensors


def _draft_tensors(spec: TinyDFlashSpec, rng: np.random.Generator) -> Tensors:
    echo = spec.weights == "echo"
    n = spec.embedding
    fc = _normal(rng, (n, n * len(spec.target_layers)))
    # Echo: zero target features and zero <mask> embeddings leave the anchor token as the only
    # non-zero attention value, so identity V/O copy it to every mask position and the shared
    # output head predicts the anchor everywhere - which the echo target then accepts.
    tensors: Tensors = {
        "fc.weight": _zeros(fc.shape) if echo else fc,
        "enc.output_norm.weight": _ones(n),
        "output_norm.weight": _ones(n),
    }
    p = "blk.0."
    tensors[p + "attn_norm.weight"] = _ones(n)
    tensors[p + "attn_q.weight"] = _normal(rng, (n, n))
    tensors[p + "attn_k.weight"] = _normal(rng, (n, n))
    v, o = _normal(rng, (n, n)), _normal(rng, (n, n))
    tensors[p + "attn_v.weight"] = _eye(n) if echo else v
    tensors[p + "attn_output.weight"] = _eye(n) if echo else o
    tensors[p + "attn_q_norm.weight"] = _ones(spec.head_size)
    tensors[p + "attn_k_norm.weight"] = _ones(spec.head_size)
    tensors[p + "ffn_norm.weight"] = _ones(n)
    tensors[p + "ffn_gate.weight"] = _normal(rng, (spec.ff, n))
    tensors[p + "ffn_up.weight"] = _normal(rng, (spec.ff, n))
    down = _normal(rng, (n, spec.ff))
    tensors[p + "ffn_down.weight"] = _zeros(down.shape) if echo else down
    return tensors


# --------------------------------------------------------------------------- metadata


def _add_tokenizer(w: GGUFWriter, tok: TokenizerData) -> None:
    w.add_tokenizer_model(tok.model)
    if tok.pre:
        w.add_tokenizer_pre(tok.pre)
    w.add_token_list(list(tok.tokens))
    w.add_token_scores([float(s) for s in tok.scores])
    w.add_token_types([int(t) for t in tok.token_types])
    optional: list[tuple[int | bool | None, Callable[[Any], None]]] = [
        (tok.bos_id, w.add_bos_token_id),
        (tok.eos_id, w.add_eos_token_id),
        (tok.unk_id, w.add_unk_token_id),
        (tok.pad_id, w.add_pad_token_id),
        (tok.add_bos, w.add_add_bos_token),
        (tok.add_eos, w.add_add_eos_token),
        (tok.add_sep, w.add_add_sep_token),
        (tok.add_space_prefix, w.add_add_space_prefix),
    ]
    for value, add in optional:
        if value is not None:
            add(value)


def _add_sizes(w: GGUFWriter, spec: TinyDFlashSpec, n_vocab: int, blocks: int, kv_heads: int) -> None:
    w.add_context_length(spec.context)
    w.add_embedding_length(spec.embedding)
    w.add_block_count(blocks)
    w.add_feed_forward_length(spec.ff)
    w.add_head_count(spec.heads)
    w.add_head_count_kv(kv_heads)
    w.add_key_length(spec.head_size)
    w.add_value_length(spec.head_size)
    # llama rejects a rope dimension different from the head size.
    w.add_rope_dimension_count(spec.head_size)
    w.add_rope_freq_base(_ROPE_FREQ_BASE)
    w.add_layer_norm_rms_eps(_RMS_EPS)
    w.add_vocab_size(n_vocab)
    w.add_file_type(0)  # all F32


def _write_gguf(path: Path, writer: GGUFWriter, tensors: Tensors) -> None:
    """Write next to ``path`` and rename, so a concurrent reader never sees half a file."""
    for name, array in tensors.items():
        writer.add_tensor(name, array)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        writer.write_header_to_file(tmp)
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
        writer.close()
        os.replace(tmp, path)
    finally:
        writer.close()
        tmp.unlink(missing_ok=True)


def _mask_id(tok: TokenizerData) -> int:
    try:
        return tok.tokens.index(_MASK_TOKEN)
    except ValueError:
        raise TinyModelError(f"the kept vocabulary has no {_MASK_TOKEN} token, which DFlash drafts need") from None


def _spec_hash(spec: TinyDFlashSpec, tok: TokenizerData) -> str:
    payload = json.dumps(
        {"format": _FORMAT_VERSION, "spec": asdict(spec), "tokenizer": tok.fingerprint()}, sort_keys=True
    )
    return hashlib.sha256(payload.encode()).hexdigest()[:12]


def _pair_paths(out_dir: Path, spec: TinyDFlashSpec, tok: TokenizerData) -> TinyModelPaths:
    tag = f"{spec.weights}-{_spec_hash(spec, tok)}"
    return TinyModelPaths(
        target=out_dir / f"tiny-dflash-target-{tag}.gguf",
        draft=out_dir / f"tiny-dflash-draft-{tag}.gguf",
    )


def _write_target(path: Path, tok: TokenizerData, spec: TinyDFlashSpec, mask_id: int) -> None:
    n_vocab = len(tok.tokens)
    # Separate generators keep target and draft weights independent of each other's sizes.
    rng = np.random.default_rng([spec.seed, 0])
    w = GGUFWriter(None, "llama")
    w.add_name("localagent tiny DFlash target")
    _add_sizes(w, spec, n_vocab, spec.blocks, spec.kv_heads)
    _add_tokenizer(w, tok)
    w.add_chat_template(_CHAT_TEMPLATE)
    _write_gguf(path, w, _target_tensors(spec, n_vocab, mask_id, rng))


def _write_draft(path: Path, tok: TokenizerData, spec: TinyDFlashSpec, mask_id: int) -> None:
    n_vocab = len(tok.tokens)
    rng = np.random.default_rng([spec.seed, 1])
    w = GGUFWriter(None, "dflash")
    w.add_name("localagent tiny DFlash draft")
    # head_count_kv == head_count so the echo draft's identity V/O are square.
    _add_sizes(w, spec, n_vocab, 1, spec.heads)
    w.add_array("dflash.target_layers", [int(i) for i in spec.target_layers])
    w.add_uint32("dflash.block_size", spec.block_size)
    _add_tokenizer(w, tok)
    w.add_mask_token_id(mask_id)
    _write_gguf(path, w, _draft_tensors(spec, rng))


# --------------------------------------------------------------------------- public entry points


def write_tiny_dflash_pair(out_dir: Path, tokenizer: TokenizerData, spec: TinyDFlashSpec) -> TinyModelPaths:
    """Write (or reuse) the target/draft GGUF pair for ``spec`` under ``out_dir``."""
    tok = tokenizer.truncated(spec.vocab_keep)
    out = Path(out_dir)
    paths = _pair_paths(out, spec, tok)
    if paths.target.is_file() and paths.draft.is_file():
        return paths
    mask_id = _mask_id(tok)
    out.mkdir(parents=True, exist_ok=True)
    _write_draft(paths.draft, tok, spec, mask_id)
    _write_target(paths.target, tok, spec, mask_id)
    return paths


def ensure_tiny_dflash_pair(
    cache_dir: Path, gemma_gguf: Path, spec: TinyDFlashSpec = TinyDFlashSpec()
) -> TinyModelPaths:
    """Read Gemma's tokenizer and write (or reuse) the pair for ``spec`` in ``cache_dir``."""
    tokenizer = read_gemma_tokenizer(gemma_gguf, spec.vocab_keep)
    return write_tiny_dflash_pair(cache_dir, tokenizer, spec)
