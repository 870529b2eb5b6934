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


async def honours_request_limits(root_url: str, api_key: str | None = None, timeout: float = 10.0) -> bool:
    """True where the server takes a request's ``speculative.n_max`` and has a drafter to limit."""
    root = root_url.rstrip("/")
    try:
        async with httpx2.AsyncClient(timeout=timeout, headers=auth_headers(api_key)) as client:
            props = await client.get(f"{root}/props")
            if props.status_code != 200 or not _takes_request_limits(props.json()):
                return False
            slots = await client.get(f"{root}/slots")
    except (httpx2.HTTPError, ValueError):
        return False
    if slots.status_code != 200:
        return True  # slots hidden (--no-slots): whether it drafts is not known, so assume it may
    try:
        listed = slots.json()
    except ValueError:
        return True
    if not isinstance(listed, list):
        return True
    return any(isinstance(slot, Mapping) and slot.get("speculative") for slot in listed)


def _takes_request_limits(props: Any) -> bool:
    settings = props.get("default_generation_settings") if isinstance(props, Mapping) else None
    params = settings.get("params") if isinstance(settings, Mapping) else None
    return isinstance(params, Mapping) and "speculative.n_max" in params
