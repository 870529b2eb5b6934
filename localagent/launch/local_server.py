"""The server an agent is launched on: the profile's managed llama-server, started in the
background or attached to, as ``localagent server start PROFILE`` does (``start_daemon``), so it
outlives the agent and ``localagent server stop`` ends it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from localagent.console import err
from localagent.model_name import request_model
from localagent.server_start import start_in_background
from server.profiles import Profile
from server.props import fetch_n_ctx

if TYPE_CHECKING:
    from localagent.context import AppContext


@dataclass(frozen=True)
class LocalServer:
    profile: str
    base_url: str  # the server's root, without /v1
    api_key: str | None  # what requests must carry; None when the server wants none
    model: str  # the name requests carry as their model
    context_tokens: int | None  # per slot: what one conversation may fill
    # The profile the running server was started for: another one with the same model when
    # attached to it ("external" when localagent did not start it).
    serving_profile: str


async def start_or_attach(ctx: AppContext, given_profile: str | None) -> LocalServer:
    """The profile's server, ready: started in the background, or the one already serving it."""
    name = ctx.profile_name(given_profile)
    manager = ctx.server_manager()
    handle = await start_in_background(manager, name)
    record = handle.record
    # A key the manager made for a server open to the network, or the one its record keeps.
    api_key = manager.api_key or (record.api_key if record else None)
    profile = ctx.profiles.get(name)
    model = await request_model(None, profile.model_id if profile else None, handle.api_base, api_key)
    # What the server says one slot holds (llama-server's /props reports its slot's n_ctx, after
    # the split between slots, --kv-unified-per-slot and the model's training context; vLLM its
    # max_model_len), else what it said when it started; the profile's settings only when neither does.
    context = await fetch_n_ctx(handle.base_url, api_key)
    if context is None:
        context = (record.n_ctx if record else None) or (slot_context(profile) if profile else None)
    if handle.attached:
        err.print(f"using the server already running at {handle.base_url}")
    return LocalServer(
        profile=name,
        base_url=handle.base_url,
        api_key=api_key,
        model=model,
        context_tokens=context,
        serving_profile=handle.profile,
    )


def slot_context(profile: Profile) -> int | None:
    """The context one conversation gets from a profile, from its settings alone (for a profile
    whose server is not running): llama-server splits its context between the slots unless the KV
    cache is unified, by the rule the memory plan sizes that cache with (``cache_settings``: how
    many slots, unified or not, ``-np auto`` included); vLLM and SGLang give one request the
    whole context."""
    from server.engines import launched_engine
    from server.memory_plan import cache_settings

    if not profile.ctx_size:
        return None
    if launched_engine(profile) is not None:
        return profile.ctx_size
    cache = cache_settings(profile)
    return cache.n_ctx if cache.unified else cache.n_ctx // cache.n_seq
