"""Which engine answers at a URL, and its version, from the endpoints each one has.

llama-server has ``/props`` (with ``build_info``), vLLM ``/version`` (``{"version": ...}``), SGLang
``/server_info`` (``/get_server_info`` before 0.5.x renamed it) with a ``version``; all three list
their models at ``/v1/models``, where vLLM and SGLang name themselves in ``owned_by``. A server
that has none of these is "unknown"; its /metrics names may still tell (server.engine_metrics).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx2

from server.engine_metrics import LLAMA_CPP, SGLANG, VLLM
from server.http import auth_headers

ENGINE_NAMES = {LLAMA_CPP: "llama.cpp", VLLM: "vLLM", SGLANG: "SGLang"}


@dataclass(frozen=True)
class EngineIdentity:
    engine: str | None  # LLAMA_CPP, VLLM, SGLANG, or None when nothing says
    version: str | None = None

    def describe(self) -> str:
        if self.engine is None:
            return "unknown"
        name = ENGINE_NAMES.get(self.engine, self.engine)
        return f"{name} {self.version}" if self.version else name


async def identify_engine(base_url: str, client: httpx2.AsyncClient, api_key: str | None = None) -> EngineIdentity:
    props = await _get(client, f"{base_url}/props", api_key)
    if props is not None and ("build_info" in props or "default_generation_settings" in props):
        return EngineIdentity(LLAMA_CPP, _text(props.get("build_info")))
    version = await _get(client, f"{base_url}/version", api_key)
    if version is not None and "version" in version:
        return EngineIdentity(VLLM, _text(version["version"]))
    for path in ("/server_info", "/get_server_info"):
        info = await _get(client, f"{base_url}{path}", api_key)
        if info is not None and "version" in info:
            return EngineIdentity(SGLANG, _text(info["version"]))
    models = await _get(client, f"{base_url}/v1/models", api_key)
    entries = (models or {}).get("data")
    for entry in entries if isinstance(entries, list) else ():
        owner = str(entry.get("owned_by", "")).lower() if isinstance(entry, dict) else ""
        if owner in (VLLM, SGLANG):
            return EngineIdentity(owner)
    return EngineIdentity(None)


async def _get(client: httpx2.AsyncClient, url: str, api_key: str | None) -> dict[str, Any] | None:
    try:
        response = await client.get(url, headers=auth_headers(api_key), timeout=5.0)
        data = response.json() if response.status_code == 200 else None
    except (httpx2.HTTPError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _text(value: Any) -> str | None:
    text = str(value).strip() if value is not None else ""
    return text[:80] or None
