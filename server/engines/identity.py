"""Which engine answers at a URL, and its version, from the endpoints each one has.

Each engine knows its own sign (``Engine.identify``): llama-server has ``/props`` (with
``build_info``), vLLM ``/version``, SGLang ``/server_info``. All of them list their models at
``/v1/models``, where vLLM and SGLang name themselves in ``owned_by``. A server that has none of
these is "unknown"; its /metrics names may still tell (server.engines.metrics).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx2

from server.engines import ENGINES, display_name
from server.http import auth_headers


@dataclass(frozen=True)
class EngineIdentity:
    engine: str | None  # an engine's key (server.engines.ENGINES), or None when nothing says
    version: str | None = None

    def describe(self) -> str:
        if self.engine is None:
            return "unknown"
        name = display_name(self.engine)
        return f"{name} {self.version}" if self.version else name


async def identify_engine(base_url: str, client: httpx2.AsyncClient, api_key: str | None = None) -> EngineIdentity:
    async def fetch(path: str) -> dict[str, Any] | None:
        return await _get(client, f"{base_url}{path}", api_key)

    for engine in ENGINES.values():
        identified = await engine.identify(fetch)
        if identified is not None:
            return EngineIdentity(engine.key, identified.version)
    models = await fetch("/v1/models")
    entries = (models or {}).get("data")
    owners = {engine.owned_by: engine.key for engine in ENGINES.values() if engine.owned_by}
    for entry in entries if isinstance(entries, list) else ():
        owner = str(entry.get("owned_by", "")).lower() if isinstance(entry, dict) else ""
        if owner in owners:
            return EngineIdentity(owners[owner])
    return EngineIdentity(None)


async def _get(client: httpx2.AsyncClient, url: str, api_key: str | None) -> dict[str, Any] | None:
    try:
        response = await client.get(url, headers=auth_headers(api_key), timeout=5.0)
        data = response.json() if response.status_code == 200 else None
    except (httpx2.HTTPError, ValueError):
        return None
    return data if isinstance(data, dict) else None
