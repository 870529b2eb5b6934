"""Does a running llama-server honour per-request speculative limits?

Our builds carry the patch that makes it do so (server/patches); a binary the user brings may
not, and an unpatched b11434 ignores the fields without a word. One request of one token with
``speculative.n_max = 0`` tells them apart: a server that honours the field echoes it in the
answer's ``generation_settings``; one that does not leaves it out.
"""

from __future__ import annotations

import httpx2

from server.http import auth_headers


async def honours_request_limits(root_url: str, api_key: str | None = None, timeout: float = 10.0) -> bool:
    body = {"prompt": "1", "n_predict": 1, "temperature": 0, "speculative.n_max": 0, "cache_prompt": False}
    try:
        async with httpx2.AsyncClient(timeout=timeout) as client:
            answer = await client.post(f"{root_url.rstrip('/')}/completion", json=body, headers=auth_headers(api_key))
        if answer.status_code != 200:
            return False
        settings = answer.json().get("generation_settings") or {}
    except (httpx2.HTTPError, ValueError, AttributeError):
        return False
    return isinstance(settings, dict) and settings.get("speculative.n_max") == 0
