"""Starting a profile's server in the background, as the person sees it: the states it passes
through, then the warnings the manager gathered (exposure, RPC, the GPU traps), one line each.
``server start`` and ``launch`` start servers this one way."""

from __future__ import annotations

import asyncio

from rich.markup import escape

from localagent.console import err
from server.manager import ServerHandle, ServerManager

_STATE_WORDS = {"starting": "starting llama-server", "loading": "loading the model"}


async def start_in_background(manager: ServerManager, profile: str, port: int | str | None = None) -> ServerHandle:
    def on_state(state: str) -> None:
        if label := _STATE_WORDS.get(state):
            err.print(f"{label}…")

    try:
        return await manager.start_daemon(profile, port=port, on_state=on_state)
    finally:
        for note in manager.notes:
            err.print(escape(note), soft_wrap=True)


def start_in_background_sync(manager: ServerManager, profile: str, port: int | str | None = None) -> ServerHandle:
    return asyncio.run(start_in_background(manager, profile, port))
