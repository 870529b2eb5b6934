"""The name every request carries as ``model``. llama-server ignores it, but a router in front of
several models (llama-swap, Ollama) picks the model by it, so it must be one that server knows.

In order: ``--model``, the managed profile's ``model_id``, the first id the endpoint lists at
``/v1/models``; "local" when none of those says anything.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx2

from server.http import auth_headers

FALLBACK_MODEL = "local"
LIST_TIMEOUT = 5.0
# A model list is a few hundred bytes; a router's, a few kilobytes.
MAX_LIST_BYTES = 1 << 20


async def served_model_id(api_base: str, api_key: str | None, timeout: float = LIST_TIMEOUT) -> str | None:
    """The first model's id at ``{api_base}/models``; None when the endpoint does not say.

    The endpoint may be anyone's (``--base-url``): the whole answer has a deadline and a size
    cap, and JSON too deep to parse is no answer, so it can neither hang nor crash the start."""
    try:
        body = await asyncio.wait_for(_models_body(f"{api_base.rstrip('/')}/models", api_key, timeout), timeout)
        data: Any = json.loads(body) if body is not None else None
    except (httpx2.HTTPError, ValueError, RecursionError, TimeoutError):
        return None
    try:
        first = data["data"][0]["id"]
    except (KeyError, IndexError, TypeError):
        return None
    return first if isinstance(first, str) and first.strip() else None


async def _models_body(url: str, api_key: str | None, timeout: float) -> bytes | None:
    async with httpx2.AsyncClient() as client:
        async with client.stream("GET", url, headers=auth_headers(api_key), timeout=timeout) as response:
            if response.status_code != 200:
                return None
            body = bytearray()
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) > MAX_LIST_BYTES:
                    return None
            return bytes(body)


async def request_model(given: str | None, profile_model: str | None, api_base: str, api_key: str | None) -> str:
    """The model name for this session's requests (see the module's docstring for the order)."""
    for name in (given, profile_model):
        if name and name.strip():
            return name.strip()
    return await served_model_id(api_base, api_key) or FALLBACK_MODEL
