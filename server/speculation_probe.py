"""Does a running llama-server honour per-request speculative limits, and does it draft at all?

Our builds carry the patch that makes it honour them (server/patches); a binary the user brings
may not, and an unpatched b11434 ignores the fields without a word. The patch adds
``speculative.n_max`` to the generation settings, and ``/props`` shows the defaults of those, so
one GET tells them apart. ``/slots`` says whether any slot drafts: on a server without a drafter
there is nothing to choose per request.

Both are reads. A probe that sent a completion would take a slot: on a one-slot server it waits
behind another session's answer and then replaces the prompt the server had cached.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx2

from server.http import auth_headers
from server.props import fetch_props
from server.telemetry import ServerInfo


async def honours_request_limits(root_url: str, api_key: str | None = None, timeout: float = 10.0) -> bool:
    """True where the server takes a request's ``speculative.n_max`` and has a drafter to limit."""
    root = root_url.rstrip("/")
    async with httpx2.AsyncClient(timeout=timeout) as client:
        props = await fetch_props(root, client, api_key, timeout)
        if props is None or not _takes_request_limits(props):
            return False
        try:
            answer = await client.get(f"{root}/slots", headers=auth_headers(api_key))
            slots = answer.json() if answer.status_code == 200 else None
        except (httpx2.HTTPError, ValueError):
            slots = None
    # Slots hidden (--no-slots) or unreadable: whether it drafts is not known, so assume it may.
    drafts = ServerInfo.from_json(props, slots if isinstance(slots, list) else None).speculative
    return drafts is not False


def _takes_request_limits(props: Mapping[str, Any]) -> bool:
    settings = props.get("default_generation_settings")
    params = settings.get("params") if isinstance(settings, Mapping) else None
    return isinstance(params, Mapping) and "speculative.n_max" in params
