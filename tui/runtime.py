"""What the TUI needs from a runtime, and the factory that builds one.

``localagent.agent_setup.AgentRuntime`` satisfies these protocols; so do the synthetic runtime used
by snapshot tests and the benchmark. Typing against protocols keeps the TUI a consumer only.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Protocol

from agent.events import Event
from server.supervisor import SupervisorStatus

StatusCallback = Callable[[SupervisorStatus], None]
RuntimeFactory = Callable[[StatusCallback], Awaitable["TuiRuntime"]]


class TuiPolicy(Protocol):
    @property
    def mode(self) -> Any: ...


class TuiAgent(Protocol):
    totals: dict[str, int]
    n_ctx: int | None
    messages: list[dict[str, Any]]
    policy: TuiPolicy

    def run_turn(self, user_text: str) -> AsyncIterator[Event]: ...

    def compact_now(self) -> AsyncIterator[Event]: ...

    def clear(self) -> Event: ...

    def set_mode(self, mode: str) -> None: ...


class TuiRuntime(Protocol):
    agent: Any
    server: Any
    session_id: str
    checkpoints: Any
    base_url: str

    async def close(self) -> None: ...


def server_root(base_url: str) -> str | None:
    """The server's own root (where /metrics lives) for an OpenAI base URL; None if not HTTP."""
    if not base_url.startswith(("http://", "https://")):
        return None
    return base_url.rstrip("/").removesuffix("/v1")
