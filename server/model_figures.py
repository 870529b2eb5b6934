"""Architecture figures the built-in GPU profiles record for their models, each with its source,
so `server plan` answers where a GGUF header cannot be read (no network, nothing downloaded yet).
A header, when it can be read, always wins."""

from __future__ import annotations

from server.memory_plan import ModelShape

_GEMMA4_LAYERS = 60
# Five sliding-window layers, then one full-attention layer, repeated (layers 5, 11, ... 59 are full).
_GEMMA4_SWA = tuple(il % 6 != 5 for il in range(_GEMMA4_LAYERS))
_GEMMA4_SOURCE = (
    "recorded figures for Gemma 4 31B: google-deepmind/gemma gemma/gm/nn/gemma4/_gemma4.py (Gemma4_31B: 60 layers, "
    "width 5376, 32 heads, 16 KV heads of 256 on sliding layers, 4 of 512 on full ones, window 1024) and the "
    "model's config.json (vocabulary 262144, context 262144); file size estimated from 30.70 B parameters at "
    "4.65 bits per weight, the rate of Gemma 3 27B's Q4_K_S"
)
GEMMA4_31B_Q4_K_S = ModelShape(
    architecture="gemma4",
    n_layer=_GEMMA4_LAYERS,
    n_embd=5376,
    n_vocab=262144,
    n_ff=21504,
    head_count_kv=tuple(16 if swa else 4 for swa in _GEMMA4_SWA),
    # Full layers share K and V weights, but llama.cpp stores both (src/models/gemma4.cpp).
    key_length=512,
    value_length=512,
    key_length_swa=256,
    value_length_swa=256,
    sliding_window=1024,
    swa_layers=_GEMMA4_SWA,
    weights_bytes=17_850_000_000,
    source=_GEMMA4_SOURCE,
    context_length=262144,
)
GEMMA4_31B_DFLASH_Q5_K_M = ModelShape(
    architecture="dflash",
    n_layer=5,
    n_embd=5376,
    n_vocab=0,  # the draft borrows the target's embeddings and output layer
    n_ff=10752,
    head_count_kv=(8,) * 5,
    key_length=128,
    value_length=128,
    key_length_swa=128,
    value_length_swa=128,
    sliding_window=2048,
    swa_layers=(True, True, True, True, False),
    weights_bytes=1_040_000_000,
    source=(
        "recorded figures for the Gemma 4 31B DFlash draft: z-lab/gemma-4-31B-it-DFlash config.json (5 layers, "
        "width 5376, 8 KV heads of 128, 4 sliding layers with window 2048, then 1 full); file size 1.04 GB as "
        "published for gemma4-31b-it-dflash-Q5_K_M.gguf"
    ),
)

# (Hugging Face repository, file) -> figures.
RECORDED: dict[tuple[str, str], ModelShape] = {
    ("unsloth/gemma-4-31B-it-GGUF", "gemma-4-31B-it-Q4_K_S.gguf"): GEMMA4_31B_Q4_K_S,
    ("Anbeeld/gemma-4-31B-it-DFlash-GGUF", "gemma4-31b-it-dflash-Q5_K_M.gguf"): GEMMA4_31B_DFLASH_Q5_K_M,
}
