"""What a serving llama-server says about itself in ``/props``."""

from __future__ import annotations

from typing import Any

import httpx2

from server.http import auth_headers


async def fetch_props(
    base_url: str, client: httpx2.AsyncClient, api_key: str | None = None, timeout: float = 5.0
) -> dict[str, Any] | None:
    """``/props`` as a dict; None when the server does not answer it (or is not llama-server)."""
    try:
        response = await client.get(f"{base_url}/props", headers=auth_headers(api_key), timeout=timeout)
        data = response.json() if response.status_code == 200 else None
    except (httpx2.HTTPError, ValueError):
        return None
    return data if isinstance(data, dict) else None


async def served_model_path(base_url: str, client: httpx2.AsyncClient, api_key: str | None) -> str | None:
    props = await fetch_props(base_url, client, api_key)
    return props.get("model_path") if props else None


async def fetch_n_ctx(base_url: str, api_key: str | None = None) -> int | None:
    async with httpx2.AsyncClient() as client:
        props = await fetch_props(base_url, client, api_key)
    try:
        return int(props["default_generation_settings"]["n_ctx"]) if props else None
    except (ValueError, KeyError, TypeError):
        return None
