"""GGUF files from Hugging Face, kept in the shared Hugging Face cache.

Downloads go where huggingface_hub puts them (``HF_HUB_CACHE``, else ``$HF_HOME/hub``, else
``~/.cache/huggingface/hub``), so a file llama.cpp's ``-hf``, transformers or ``hf download``
already fetched is used as it is, and the next tool reuses ours. A file in localagent's own models
folder (where older versions downloaded) is still found first and never fetched again.

A file already in the cache is used without asking the Hub, which makes a start fast and works
offline. With ``HF_HUB_OFFLINE=1`` nothing is asked at all; the shorthand is then resolved from the
files of the cached snapshots.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any, cast

from server.errors import ModelError, ProfileError
from server.hf_quants import (
    DEFAULT_QUANTS,
    HfShorthand,
    available,
    models_in,
    parse_shorthand,
    pick_model,
    split_parts,
)

LISTING_TIMEOUT_S = 15.0
_TRUE = {"1", "on", "yes", "true"}


def hub_cache_dir(override: Path | None = None) -> Path:
    """The shared Hugging Face cache huggingface_hub uses (HF_HUB_CACHE / HF_HOME honoured)."""
    if override is not None:
        return override
    from huggingface_hub import constants

    return Path(constants.HF_HUB_CACHE)


def offline() -> bool:
    """HF_HUB_OFFLINE (or TRANSFORMERS_OFFLINE), read now as well as when huggingface_hub loaded."""
    value = os.environ.get("HF_HUB_OFFLINE") or os.environ.get("TRANSFORMERS_OFFLINE") or ""
    if value.strip().lower() in _TRUE:
        return True
    from huggingface_hub import constants

    return bool(constants.HF_HUB_OFFLINE)


def resolve_exact(repo: str, filename: str, *, legacy_dir: Path, cache: Path | None, fetch: bool) -> Path:
    """``hf_repo`` + ``hf_file``: the file (all its parts, when split), fetched unless cached."""
    parts = split_parts(filename)
    hub = hub_cache_dir(cache)
    found = _legacy(legacy_dir, parts) or cached_parts(repo, parts, hub)
    if found is not None:
        return found
    if not fetch:
        return _snapshot_dir(repo, hub, None) / parts[0]
    hint = _download_hint(repo, parts)
    if offline():
        raise ModelError(
            f"{repo}/{filename} is not in the Hugging Face cache ({hub}) and HF_HUB_OFFLINE is set; {hint}"
        )
    return download(repo, parts, revision=None, cache=hub)


def resolve_shorthand(value: str, *, legacy_dir: Path, cache: Path | None, fetch: bool) -> Path:
    """``hf = "owner/name[:QUANT]"``: the matching file, from the cache or from the Hub."""
    shorthand = parse_shorthand(value)
    hub = hub_cache_dir(cache)
    # The asked-for quant (or llama.cpp's first default) already cached: no need to ask the Hub.
    cached = _pick_cached(shorthand.repo, HfShorthand(shorthand.repo, shorthand.quant or DEFAULT_QUANTS[0]), hub)
    if cached is not None:
        return cached
    if offline():
        return _offline_pick(shorthand, hub, "HF_HUB_OFFLINE is set")
    try:
        commit, files = list_files(shorthand.repo)
    except Exception as exc:  # noqa: BLE001 - no network, Hub down, gated: the cache may still have it
        return _offline_pick(shorthand, hub, f"cannot list {shorthand.repo} on the Hub ({_reason(exc)})")
    parts = pick_model(files, shorthand)
    found = _legacy(legacy_dir, parts) or cached_parts(shorthand.repo, parts, hub)
    if found is not None:
        return found
    if not fetch:
        return _snapshot_dir(shorthand.repo, hub, commit) / parts[0]
    return download(shorthand.repo, parts, revision=commit, cache=hub)


def list_files(repo: str) -> tuple[str | None, list[str]]:
    """The repository's commit on main and every file in it, from one Hub request."""
    from huggingface_hub import HfApi

    info = HfApi(endpoint=_endpoint()).model_info(repo, timeout=LISTING_TIMEOUT_S)
    return info.sha, [sibling.rfilename for sibling in info.siblings or []]


def download(repo: str, parts: list[str], *, revision: str | None, cache: Path) -> Path:
    """Every part into the shared cache, with huggingface_hub's progress bar on stderr."""
    from huggingface_hub import hf_hub_download

    paths: list[str] = []
    for part in parts:
        try:
            paths.append(
                hf_hub_download(
                    repo_id=repo,
                    filename=part,
                    revision=revision,
                    cache_dir=cache,
                    endpoint=_endpoint(),
                    tqdm_class=cast("type[Any]", _stderr_tqdm()),
                )
            )
        except Exception as exc:  # noqa: BLE001 - network, auth, missing file: all end the same way for the user
            raise ModelError(f"cannot download {repo}/{part} ({_reason(exc)}); {_download_hint(repo, parts)}") from None
    return Path(paths[0])


def cached_parts(repo: str, parts: list[str], cache: Path) -> Path | None:
    """The first part's path in a cached snapshot that holds every part, or None."""
    for snapshot in snapshots(repo, cache):
        if all((snapshot / part).is_file() for part in parts):
            return snapshot / parts[0]
    return None


def snapshots(repo: str, cache: Path) -> list[Path]:
    """The repository's cached snapshots: main's first, then the newest."""
    root = _storage(repo, cache) / "snapshots"
    if not root.is_dir():
        return []
    found = sorted((p for p in root.iterdir() if p.is_dir()), key=_mtime, reverse=True)
    main = _ref(repo, cache, "main")
    return sorted(found, key=lambda p: p.name != main)


def snapshot_files(snapshot: Path) -> list[str]:
    """Paths of the files a snapshot holds (complete downloads only: links to existing blobs)."""
    return sorted(p.relative_to(snapshot).as_posix() for p in snapshot.rglob("*") if p.is_file())


def _pick_cached(repo: str, shorthand: HfShorthand, cache: Path) -> Path | None:
    """The shorthand resolved against the files of a cached snapshot, or None."""
    for snapshot in snapshots(repo, cache):
        try:
            return snapshot / pick_model(snapshot_files(snapshot), shorthand)[0]
        except ProfileError:
            continue
    return None


def _offline_pick(shorthand: HfShorthand, cache: Path, why: str) -> Path:
    picked = _pick_cached(shorthand.repo, shorthand, cache)
    if picked is not None:
        return picked
    cached = {path for snapshot in snapshots(shorthand.repo, cache) for path in snapshot_files(snapshot)}
    has = f" (it has {available(models_in(cached))})" if models_in(cached) else ""
    include = f"*{shorthand.quant or DEFAULT_QUANTS[0]}*"
    raise ModelError(
        f"{shorthand}: {why}, and the Hugging Face cache ({cache}) has no single file for it{has}; "
        f"download it with: hf download {shlex.quote(shorthand.repo)} --include {shlex.quote(include)}"
    )


def _legacy(folder: Path, parts: list[str]) -> Path | None:
    """A file older localagent versions downloaded into their own folder."""
    return folder / parts[0] if all((folder / part).is_file() for part in parts) else None


def _storage(repo: str, cache: Path) -> Path:
    from huggingface_hub.file_download import repo_folder_name

    return cache / repo_folder_name(repo_id=repo, repo_type="model")


def _ref(repo: str, cache: Path, name: str) -> str | None:
    try:
        return (_storage(repo, cache) / "refs" / name).read_text().strip() or None
    except OSError:
        return None


def _snapshot_dir(repo: str, cache: Path, commit: str | None) -> Path:
    """Where a file would land: the commit's snapshot (main's, or "main" while none is known)."""
    return _storage(repo, cache) / "snapshots" / (commit or _ref(repo, cache, "main") or "main")


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def _endpoint() -> str | None:
    """HF_ENDPOINT as it is now (huggingface_hub reads it once, when imported)."""
    return os.environ.get("HF_ENDPOINT", "").rstrip("/") or None


def _download_hint(repo: str, parts: list[str]) -> str:
    return f"download it with: hf download {shlex.quote(repo)} {' '.join(shlex.quote(p) for p in parts)}"


def _reason(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


@cache
def _stderr_tqdm() -> Callable[..., Any]:
    """huggingface_hub's progress bar, always on stderr: stdout may be a command's output."""
    from huggingface_hub.utils import tqdm as hf_tqdm

    class StderrTqdm(hf_tqdm):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            kwargs["file"] = sys.stderr
            super().__init__(*args, **kwargs)

    return StderrTqdm
