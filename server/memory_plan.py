"""Will a profile fit on the card? Weights, draft, KV cache and compute buffers, before anything loads.

The KV cache is sized the way llama.cpp b11434 sizes it (``src/llama-kv-cache-iswa.cpp``,
``src/llama-kv-cache.cpp``, ``src/llama-context.cpp``):
- the context is padded to 256 cells; without a unified cache each slot has a stream of its own of
  ``pad256(n_ctx / n_seq)`` cells; full-attention layers hold every cell;
- sliding-window layers hold ``pad256(min(stream, window * (n_seq if unified else 1) + n_ubatch))``
  cells per stream unless ``swa_full`` (then every cell);
- a layer's cell holds ``head_count_kv * key_length`` K elements and ``head_count_kv *
  value_length`` V elements, in the cache type's bytes (``q8_0``: 34 bytes per 32 elements);
  without flash attention every V row is padded to the widest layer's;
- a DFlash draft gets its own cache at the target's context, in f16.
Compute buffers and the CUDA context are estimates, and say so.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType

from server.errors import ProfileError
from server.gguf_header import GGUFHeader
from server.nvidia_smi import NvidiaSmiError, Runner, nvidia_smi

if TYPE_CHECKING:
    from server.profiles import Profile

GIB = 1 << 30
MIB = 1 << 20
# llama.cpp's --fit keeps this much of each device free (its --fit-target default).
FIT_MARGIN = 1024 * MIB
# CUDA's context, cuBLAS workspaces and the like: not in any file, measured in hundreds of MiB.
CUDA_OVERHEAD = 512 * MIB
# Per architecture, the period of sliding-window layers when the file has no per-layer list
# (llama.cpp's defaults in src/models/*.cpp: gemma3 loads its pattern with 6).
_SWA_PERIODS = {"gemma3": 6, "gemma2": 2, "cohere2": 4}


@dataclass(frozen=True)
class ModelShape:
    architecture: str
    n_layer: int
    n_embd: int
    n_vocab: int
    n_ff: int
    head_count_kv: tuple[int, ...]  # per layer
    key_length: int
    value_length: int
    key_length_swa: int
    value_length_swa: int
    sliding_window: int  # 0: no sliding-window layers
    swa_layers: tuple[bool, ...]  # per layer
    weights_bytes: int
    source: str
    context_length: int | None = None

    def row_elements(self, layer: int) -> tuple[int, int]:
        """K and V elements per cell of one layer."""
        swa = self.swa_layers[layer]
        k = self.key_length_swa if swa else self.key_length
        v = self.value_length_swa if swa else self.value_length
        return self.head_count_kv[layer] * k, self.head_count_kv[layer] * v


def _per_layer(value: Any, n_layer: int, what: str) -> tuple[int, ...]:
    if isinstance(value, list):
        if len(value) != n_layer:
            raise ValueError(f"{what} lists {len(value)} layers, not {n_layer}")
        return tuple(int(v) for v in value)
    return (int(value),) * n_layer


def shape_from_header(header: GGUFHeader, source: str) -> ModelShape:
    """The shape llama.cpp reads from the same keys (``{arch}.block_count`` and the rest)."""
    arch = header.architecture
    n_layer = int(header.arch_value("block_count", 0))
    n_head = int(_first(header.arch_value("attention.head_count", 1))) or 1  # recurrent models write 0
    n_embd = int(header.arch_value("embedding_length", 0))
    if not arch or n_layer <= 0 or n_embd <= 0:
        raise ValueError("the header names no architecture, block count or embedding length")
    kv = header.arch_value("attention.head_count_kv", n_head)
    key_length = int(header.arch_value("attention.key_length", n_embd // n_head))
    value_length = int(header.arch_value("attention.value_length", key_length))
    window = int(header.arch_value("attention.sliding_window", 0) or 0)
    pattern = header.arch_value("attention.sliding_window_pattern")
    if window <= 0:
        swa = (False,) * n_layer
    elif isinstance(pattern, list):
        if len(pattern) != n_layer:
            raise ValueError(f"the sliding-window pattern lists {len(pattern)} layers, not {n_layer}")
        swa = tuple(bool(p) for p in pattern)
    else:
        period = int(pattern) if pattern is not None else _SWA_PERIODS.get(arch, 0)
        # llama_hparams::set_swa_pattern: every period-th layer is full attention (0: none is).
        swa = (
            tuple(period == 0 or (il % period < period - 1) for il in range(n_layer)) if period else (False,) * n_layer
        )
    vocab = header.array_lengths.get("tokenizer.ggml.tokens") or int(header.arch_value("vocab_size", 0) or 0)
    return ModelShape(
        architecture=arch,
        n_layer=n_layer,
        n_embd=n_embd,
        n_vocab=vocab,
        n_ff=int(_first(header.arch_value("feed_forward_length", 4 * n_embd))),
        head_count_kv=_per_layer(kv, n_layer, "head_count_kv"),
        key_length=key_length,
        value_length=value_length,
        key_length_swa=int(header.arch_value("attention.key_length_swa", key_length)),
        value_length_swa=int(header.arch_value("attention.value_length_swa", value_length)),
        sliding_window=window,
        swa_layers=swa,
        weights_bytes=header.weights_bytes,
        source=source,
        context_length=header.arch_value("context_length"),
    )


def _first(value: Any) -> Any:
    return value[0] if isinstance(value, list) and value else value


def element_bytes(cache_type: str) -> float:
    """Bytes per element of a KV cache type, from ggml's block sizes."""
    try:
        block, size = GGML_QUANT_SIZES[GGMLQuantizationType[cache_type.upper()]]
    except KeyError:
        raise ProfileError(f"unknown KV cache type {cache_type!r}; use f16, q8_0, q5_1, q5_0, q4_1 or q4_0") from None
    return size / block


def _pad(n: int, to: int = 256) -> int:
    return (n + to - 1) // to * to


@dataclass(frozen=True)
class CacheSettings:
    n_ctx: int
    n_seq: int
    unified: bool
    n_ubatch: int
    swa_full: bool
    flash_attn: bool
    type_k: str
    type_v: str


def kv_cache_bytes(shape: ModelShape, cache: CacheSettings) -> int:
    # One stream holding every slot (unified), or one stream per slot, each of n_ctx / n_seq cells.
    streams = 1 if cache.unified else cache.n_seq
    per_stream = _pad(cache.n_ctx) if cache.unified else _pad(_pad(cache.n_ctx) // cache.n_seq)
    kv_size = per_stream * streams
    swa_cells = kv_size
    if not cache.swa_full and shape.sliding_window:
        window = shape.sliding_window * (cache.n_seq if cache.unified else 1) + cache.n_ubatch
        swa_cells = _pad(min(per_stream, window)) * streams
    k_bytes, v_bytes = element_bytes(cache.type_k), element_bytes(cache.type_v)
    widest_v = max(shape.row_elements(il)[1] for il in range(shape.n_layer))
    total = 0.0
    for il in range(shape.n_layer):
        k, v = shape.row_elements(il)
        if not cache.flash_attn:
            v = widest_v
        cells = swa_cells if shape.swa_layers[il] else kv_size
        total += cells * (k * k_bytes + v * v_bytes)
    return int(total)


def compute_bytes(shape: ModelShape, n_ubatch: int) -> int:
    """Estimate: the logits of one micro-batch (the vocabulary dominates: Gemma's 262,144 tokens
    take 512 MiB at 512) plus the widest activations of a layer."""
    return n_ubatch * (shape.n_vocab + shape.n_ff + 4 * shape.n_embd) * 4


@dataclass(frozen=True)
class PlanLine:
    what: str
    bytes: int
    note: str = ""


@dataclass
class MemoryPlan:
    profile: str
    n_ctx: int
    lines: list[PlanLine]
    vram: int | None
    vram_source: str
    sources: list[str] = field(default_factory=list)
    largest_ctx: int | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        return sum(line.bytes for line in self.lines)

    @property
    def budget(self) -> int | None:
        return None if self.vram is None else self.vram - FIT_MARGIN

    @property
    def fits(self) -> bool | None:
        return None if self.budget is None else self.total <= self.budget


def cache_settings(profile: Profile, n_ctx: int | None = None) -> CacheSettings:
    n_seq = profile.parallel or 4  # llama-server's -np auto is 4 slots
    flash = profile.flash_attn != "off" or (profile.cache_type_v or "f16") not in ("f16", "f32", "bf16")
    return CacheSettings(
        n_ctx=n_ctx if n_ctx is not None else (profile.ctx_size or 4096),
        n_seq=n_seq,
        unified=profile.kv_unified if profile.kv_unified is not None else profile.parallel is None,
        n_ubatch=profile.ubatch_size or 512,
        swa_full=profile.swa_full,
        flash_attn=flash,
        type_k=profile.cache_type_k or "f16",
        type_v=profile.cache_type_v or "f16",
    )


def plan_memory(
    profile: Profile,
    target: ModelShape,
    draft: ModelShape | None,
    vram: int | None,
    vram_source: str,
) -> MemoryPlan:
    if not profile.ctx_size:
        raise ProfileError(
            f"profile {profile.name!r} sets no ctx_size: llama.cpp's --fit then picks one when it starts; "
            "set ctx_size to plan for it"
        )
    if profile.gpu_layers in (None, 0):
        raise ProfileError(f"profile {profile.name!r} puts no layers on a GPU; there is no GPU memory to plan")

    def lines_at(n_ctx: int) -> list[PlanLine]:
        cache = cache_settings(profile, n_ctx)
        lines = [
            PlanLine("target weights", target.weights_bytes, target.architecture),
            PlanLine(
                "target KV cache",
                kv_cache_bytes(target, cache),
                f"{_pad(n_ctx)} cells, K {cache.type_k}, V {cache.type_v}, {cache.n_seq} slot(s)"
                + (", flash attention" if cache.flash_attn else ""),
            ),
            PlanLine("target compute buffer", compute_bytes(target, cache.n_ubatch), "estimate"),
        ]
        if draft is not None:
            draft_cache = replace(cache, type_k="f16", type_v="f16")
            lines += [
                PlanLine("draft weights", draft.weights_bytes, draft.architecture),
                PlanLine("draft KV cache", kv_cache_bytes(draft, draft_cache), "at the target's context, f16"),
                PlanLine("draft compute buffer", compute_bytes(replace(draft, n_vocab=0), cache.n_ubatch), "estimate"),
            ]
        lines.append(PlanLine("CUDA context and workspaces", CUDA_OVERHEAD, "estimate"))
        return lines

    plan = MemoryPlan(profile.name, profile.ctx_size, lines_at(profile.ctx_size), vram, vram_source)
    plan.sources = [target.source] + ([draft.source] if draft else [])
    if plan.budget is not None:
        plan.largest_ctx = _largest_fitting(lambda n: sum(x.bytes for x in lines_at(n)), plan.budget, target)
    return plan


def _largest_fitting(total_at: Callable[[int], int], budget: int, target: ModelShape) -> int | None:
    """The largest context (a multiple of 256, up to the model's own) whose plan fits the budget."""
    low, high = 0, (target.context_length or 262144) // 256
    if total_at(256) > budget:
        return None
    while low < high:
        middle = (low + high + 1) // 2
        if total_at(middle * 256) <= budget:
            low = middle
        else:
            high = middle - 1
    return low * 256


def gpu_memory_bytes(run: Runner | None = None) -> tuple[int | None, str]:
    """The first GPU's memory from nvidia-smi, or (None, why)."""
    try:
        text = nvidia_smi("--query-gpu=memory.total,name", "--format=csv,noheader,nounits", run=run)
    except NvidiaSmiError:
        return None, "no nvidia-smi here: pass --vram GiB"
    first = text.strip().splitlines()[:1]
    if not first:
        return None, "nvidia-smi lists no GPU: pass --vram GiB"
    mib, _, name = first[0].partition(",")
    try:
        return int(float(mib)) * MIB, f"{name.strip()} (nvidia-smi)"
    except ValueError:
        return None, f"nvidia-smi gives no memory size ({mib.strip()}): pass --vram GiB"


def read_local_shape(path: Path) -> ModelShape | None:
    """The shape from a GGUF on disk, or None when the file is not there or not readable."""
    from server.gguf_header import GGUFHeaderError, read_header

    try:
        with path.open("rb") as handle:
            return shape_from_header(read_header(handle), f"the GGUF header of {path}")
    except (OSError, GGUFHeaderError, ValueError, ArithmeticError, IndexError, KeyError, TypeError):
        return None  # a file this planner cannot read is planned from other figures
