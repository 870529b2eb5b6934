"""Checking the URLs a person gives (flags, config), so a bad one is one line, not a traceback."""

from __future__ import annotations

from urllib.parse import urlsplit

EXAMPLE = "e.g. http://127.0.0.1:8910/v1"


def url_problem(url: str) -> str | None:
    """What is wrong with ``url`` as an http(s) endpoint, or None when it is usable."""
    if any(ch.isspace() or ord(ch) < 0x20 or ord(ch) == 0x7F for ch in url):
        return "contains spaces or control characters"
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises on a port that is not a number or out of range
    except ValueError as exc:
        return f"is not a valid URL ({exc})"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "must be an http:// or https:// URL with a host"
    return None
