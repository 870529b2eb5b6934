"""What a serving llama-server says about itself in ``/props``; for vLLM and SGLang, ``/v1/models``."""

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


async def fetch_models(base_url: str, client: httpx2.AsyncClient, api_key: str | None) -> list[dict[str, Any]]:
    try:
        response = await client.get(f"{base_url}/v1/models", headers=auth_headers(api_key), timeout=5.0)
        data = response.json().get("data") if response.status_code == 200 else None
    except (httpx2.HTTPError, ValueError, AttributeError):
        return []
    return [entry for entry in data if isinstance(entry, dict)] if isinstance(data, list) else []


async def served_model_ids(base_url: str, api_key: str | None) -> list[str]:
    async with httpx2.AsyncClient() as client:
        return [str(entry.get("id")) for entry in await fetch_models(base_url, client, api_key) if entry.get("id")]


async def fetch_n_ctx(base_url: str, api_key: str | None = None) -> int | None:
    """llama-server's n_ctx; vLLM's max_model_len where /props is not there."""
    async with httpx2.AsyncClient() as client:
        props = await fetch_props(base_url, client, api_key)
        try:
            if props:
                return int(props["default_generation_settings"]["n_ctx"])
        except (ValueError, KeyError, TypeError):
            return None
        for entry in await fetch_models(base_url, client, api_key):
            if isinstance(entry.get("max_model_len"), int) and entry["max_model_len"] > 0:
                return entry["max_model_len"]
    return None
