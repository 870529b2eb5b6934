"""Pure text formatting for the numbers the TUI shows (kept free of Textual so it is easy to test)."""

from __future__ import annotations

import json
from typing import Any

DASH = "–"


def rate(value: float | None, digits: int = 1) -> str:
    """Tokens per second; a dash when there is no figure yet (never a misleading 0)."""
    if value is None:
        return DASH
    return f"{value:,.{digits}f}"


def percent(value: float | None, digits: int = 1) -> str:
    if value is None:
        return DASH
    return f"{value * 100:.{digits}f} %"


def count(value: int | float | None) -> str:
    if value is None:
        return DASH
    return f"{int(value):,}"


def duration(seconds: float | None) -> str:
    if seconds is None:
        return DASH
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 60:
        return f"{seconds:.2f} s"
    minutes, rest = divmod(int(seconds), 60)
    return f"{minutes}m {rest:02d}s"


def compact_json(arguments: dict[str, Any], limit: int = 400) -> str:
    text = json.dumps(arguments, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def bar(fraction: float, width: int) -> str:
    """A horizontal bar of ``width`` cells for a fraction in [0, 1], with eighth-cell resolution."""
    fraction = min(max(fraction, 0.0), 1.0)
    eighths = round(fraction * width * 8)
    full, part = divmod(eighths, 8)
    partial = "▏▎▍▌▋▊▉"[part - 1] if part else ""
    return ("█" * full + partial).ljust(width)
