"""A model's shape for the memory plan, from the best source at hand: the GGUF on disk, the
header of the file on Hugging Face (a range request: the first megabytes, not the file), or the
figures a built-in profile records."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

from server.errors import ProfileError
from server.memory_plan import ModelShape, read_local_shape, shape_from_header
from server.model_figures import RECORDED
from server.models import ModelDirs, resolve_model
from server.profiles import ModelSource

# A header holds the metadata and tensor list: a few MiB for a 262k-token vocabulary.
HEADER_RANGE = 64 * 1024 * 1024


@dataclass(frozen=True)
class FoundShape:
    shape: ModelShape
    note: str | None = None  # why a better source was not used


RemoteReader = Callable[[str, str], ModelShape]


def find_shape(source: ModelSource, dirs: ModelDirs, remote: RemoteReader | None = None) -> FoundShape:
    path = resolve_model(source, dirs, fetch=False) if _local_possible(source) else None
    if path is not None and path.is_file():
        shape = read_local_shape(path)
        if shape is not None:
            return FoundShape(shape)
    repo, file = source.hf_repo, source.hf_file
    note = None
    if repo and file and os.environ.get("HF_HUB_OFFLINE", "") not in ("1", "true", "yes"):
        try:
            return FoundShape((remote or read_remote_shape)(repo, file))
        except (OSError, ValueError, ArithmeticError, IndexError, KeyError, TypeError) as exc:
            note = f"could not read the header of {repo}/{file} ({exc})"
    recorded = RECORDED.get((repo or "", file or ""))
    if recorded is not None:
        return FoundShape(recorded, f"{note}; using recorded figures" if note else "using recorded figures")
    what = f"{repo}/{file}" if repo else str(path or source)
    raise ProfileError(
        f"cannot read the GGUF header of {what}{f' ({note})' if note else ''} and no figures are recorded for it; "
        "download the model first (localagent server start) or point the profile at a local file"
    )


def _local_possible(source: ModelSource) -> bool:
    # A ``repo:QUANT`` shorthand not yet in the cache asks the Hub which file it names: not offline.
    return source.hf is None or ":" not in source.hf


def read_remote_shape(repo: str, file: str) -> ModelShape:
    """The header of a file on Hugging Face, read through one range request and abandoned there."""
    import httpx2

    from server.gguf_header import GGUFHeaderError, read_header

    endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co").rstrip("/")
    url = f"{endpoint}/{repo}/resolve/main/{file}"
    headers = {"Range": f"bytes=0-{HEADER_RANGE - 1}"}
    if token := os.environ.get("HF_TOKEN"):
        headers["Authorization"] = f"Bearer {token}"
    try:
        with (
            httpx2.Client(timeout=httpx2.Timeout(10.0, read=60.0), follow_redirects=True) as client,
            client.stream("GET", url, headers=headers) as response,
        ):
            response.raise_for_status()
            chunks = response.iter_bytes(1 << 16)
            buffer = bytearray()

            def read(n: int) -> bytes:
                while len(buffer) < n:
                    chunk = next(chunks, b"")
                    if not chunk:
                        break
                    buffer.extend(chunk)
                taken = bytes(buffer[:n])
                del buffer[:n]
                return taken

            header = read_header(read)
    except httpx2.HTTPError as exc:
        raise OSError(str(exc) or type(exc).__name__) from None
    except GGUFHeaderError as exc:
        raise ValueError(str(exc)) from None
    return shape_from_header(header, f"the GGUF header of {repo}/{file} (read from {endpoint})")
