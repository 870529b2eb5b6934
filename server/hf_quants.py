"""llama.cpp's ``-hf repo[:QUANT]`` shorthand: which GGUF file of a repository it names.

Pure functions over a list of file paths (the repository's listing, or the files of a cached
snapshot); fetching lives in ``server.hf_models``. The rules follow llama.cpp's
``common_download_get_hf_plan``: without a quant, Q4_K_M, then Q8_0, then the first GGUF. Unlike
llama.cpp, a quant that matches two models is an error rather than whichever comes first.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from server.errors import ProfileError

# llama.cpp's preference when `-hf` gives no quant.
DEFAULT_QUANTS = ("Q4_K_M", "Q8_0")

_REPO = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*")
_QUANT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_SPLIT = re.compile(r"^(?P<prefix>.+)-(?P<index>\d{5})-of-(?P<count>\d{5})\.gguf$", re.IGNORECASE)
# The quant at the end of a file's stem, as llama.cpp reads it, keeping unsloth's "UD-" prefix.
_TAG = re.compile(r"[-.]((?:UD-)?[A-Z0-9_]+)$", re.IGNORECASE)
# GGUFs in a model repository that are not the model itself.
_NOT_MODELS = ("mmproj", "imatrix")


@dataclass(frozen=True)
class HfShorthand:
    repo: str
    quant: str | None  # None: llama.cpp's default choice

    def __str__(self) -> str:
        return self.repo if self.quant is None else f"{self.repo}:{self.quant}"


def parse_shorthand(value: str) -> HfShorthand:
    """``owner/name`` or ``owner/name:QUANT``; a ValueError says what is wrong."""
    repo, sep, quant = value.strip().partition(":")
    if not _REPO.fullmatch(repo):
        raise ValueError(f"hf {value!r} is not owner/name[:QUANT], e.g. unsloth/gemma-4-31B-it-GGUF:Q4_K_S")
    if sep and not _QUANT.fullmatch(quant):
        raise ValueError(f"hf {value!r}: the quant after ':' must be a name such as Q4_K_M")
    return HfShorthand(repo=repo, quant=quant if sep else None)


def split_parts(path: str) -> list[str]:
    """Every part of a split GGUF (``x-00001-of-00003.gguf``), in order; ``[path]`` otherwise."""
    match = _SPLIT.match(path)
    if match is None:
        return [path]
    count = int(match["count"])
    return [f"{match['prefix']}-{i:05d}-of-{match['count']}.gguf" for i in range(1, count + 1)]


def is_first_part(path: str) -> bool:
    match = _SPLIT.match(path)
    return match is None or int(match["index"]) == 1


def is_model_gguf(path: str) -> bool:
    name = path.rsplit("/", 1)[-1].lower()
    return name.endswith(".gguf") and not any(word in name for word in _NOT_MODELS)


def quant_label(path: str) -> str | None:
    """The quant a model file's name ends with (``Q4_K_M``, ``UD-Q4_K_XL``), or None."""
    name = path.rsplit("/", 1)[-1]
    match = _SPLIT.match(name)
    stem = match["prefix"] if match else name[: -len(".gguf")]
    tag = _TAG.search(stem)
    return tag[1].upper() if tag and any(c.isdigit() for c in tag[1]) else None


def matches_quant(path: str, quant: str) -> bool:
    """The quant appears in the path as a whole token, in any case: ``Q4_K`` is not ``Q4_K_M``."""
    pattern = rf"(?<![A-Za-z0-9_]){re.escape(quant)}(?![A-Za-z0-9_])"
    return re.search(pattern, path, re.IGNORECASE) is not None


def models_in(files: Iterable[str]) -> list[str]:
    """The model GGUFs of a listing, one path per model (a split model by its first part), sorted."""
    return sorted({path for path in files if is_model_gguf(path) and is_first_part(path)})


def pick_model(files: Iterable[str], shorthand: HfShorthand) -> list[str]:
    """The parts of the model file the shorthand names, the first being the one to load.

    A quant that matches nothing, or matches two models, is a one-line ProfileError listing what
    the repository has."""
    listing = set(files)
    models = models_in(listing)
    if not models:
        raise ProfileError(f"{shorthand}: the repository has no GGUF model files")
    chosen = _choose(models, shorthand)
    parts = split_parts(chosen)
    missing = [part for part in parts if part not in listing]
    if missing:
        raise ProfileError(f"{shorthand}: {chosen} is split in {len(parts)} parts but {missing[0]} is missing")
    return parts


def _choose(models: list[str], shorthand: HfShorthand) -> str:
    for quant in (shorthand.quant,) if shorthand.quant is not None else DEFAULT_QUANTS:
        found = [path for path in models if matches_quant(path, quant)]
        if len(found) > 1:
            asked = shorthand if shorthand.quant else f"{shorthand.repo} (by default {quant})"
            raise ProfileError(
                f"{asked} matches {len(found)} files ({', '.join(found)}); give a longer quant or hf_repo + hf_file"
            )
        if found:
            return found[0]
    if shorthand.quant is None:
        return models[0]  # llama.cpp's fallback: the first model file
    raise ProfileError(f"{shorthand}: no GGUF file matches {shorthand.quant!r}; available quants: {available(models)}")


def available(models: Iterable[str]) -> str:
    labels = sorted({quant_label(path) or path for path in models})
    return ", ".join(labels) if labels else "none"
