"""Text cut down to one short line, for messages, labels and listings."""

from __future__ import annotations

__all__ = ["one_line"]


def one_line(text: str, limit: int = 200) -> str:
    """`text` with its whitespace runs (newlines included) made single spaces, cut to `limit`."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
