"""What the TUI needs from a runtime, and the factory that builds one.

``localagent.agent_setup.AgentRuntime`` satisfies these protocols; so does the synthetic runtime
the snapshot tests and the benchmark use (``tests/synthetic_runtime.py``). Typing against
protocols keeps the TUI a consumer only: it never imports the application that assembles the
agent. Members are read-only properties, so a runtime may hold a more specific type (the real
``Agent``, a ``PermissionMode``) than the TUI asks for.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

from agent.events import Event
from server.supervisor import SupervisorStatus

if TYPE_CHECKING:
    from agent.checkpoints import CheckpointStore
    from server.manager import ServerHandle
    from tools.mcp import McpManager

StatusCallback = Callable[[SupervisorStatus], None]
RuntimeFactory = Callable[[StatusCallback], Awaitable["TuiRuntime"]]


class TuiPolicy(Protocol):
    @property
    def mode(self) -> str:
        """The permission mode's name (a ``PermissionMode`` is one)."""
        ...


class TuiAgent(Protocol):
    @property
    def totals(self) -> dict[str, int]: ...

    @property
    def n_ctx(self) -> int | None: ...

    @property
    def messages(self) -> list[dict[str, Any]]: ...

    @property
    def policy(self) -> TuiPolicy: ...

    def run_turn(self, user_text: str) -> AsyncIterator[Event]: ...

    def compact_now(self) -> AsyncIterator[Event]: ...

    def clear(self) -> Event: ...

    def set_mode(self, mode: str) -> None: ...


class TuiRuntime(Protocol):
    @property
    def agent(self) -> TuiAgent: ...

    @property
    def server(self) -> ServerHandle | None:
        """The model server this session talks to; None for an endpoint given by URL."""
        ...

    @property
    def session_id(self) -> str: ...

    @property
    def checkpoints(self) -> CheckpointStore | None: ...

    @property
    def base_url(self) -> str:
        """The OpenAI base URL the agent talks to."""
        ...

    @property
    def api_key(self) -> str | None:
        """The key the agent's requests carry, for the TUI's own calls to the server."""
        ...

    @property
    def mcp(self) -> McpManager | None: ...

    @property
    def notes(self) -> list[str]:
        """One line each, for the person (MCP servers skipped or failed, the sandbox)."""
        ...

    async def close(self) -> None: ...
