"""Small helpers every client of a llama-server needs: its auth header, its root URL, its log."""

from __future__ import annotations

from collections import deque
from pathlib import Path


def auth_headers(api_key: str | None) -> dict[str, str]:
    """The Bearer header for ``api_key``; no header at all without a key."""
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}


def server_root(base_url: str) -> str:
    """The server's own root, where /health and /metrics live, for a base URL with or without /v1."""
    return base_url.rstrip("/").removesuffix("/v1")


def tail_lines(path: Path, count: int = 15) -> list[str]:
    """The last ``count`` lines of a (log) file, without their newlines; [] when it cannot be read."""
    try:
        with path.open("r", errors="replace") as handle:
            return [line.rstrip("\n") for line in deque(handle, maxlen=count)]
    except OSError:
        return []
