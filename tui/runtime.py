"""What the TUI needs from a runtime, and the factory that builds one.

``localagent.agent_setup.AgentRuntime`` satisfies these protocols; so does the synthetic runtime
the snapshot tests and the benchmark use (``tests/support/synthetic_runtime.py``). Typing against
protocols keeps the TUI a consumer only: it never imports the application that assembles the
agent. Members are read-only properties, so a runtime may hold a more specific type (the real
``Agent``, a ``PermissionMode``) than the TUI asks for.

Optional capabilities are protocols of their own, found with ``isinstance`` (they are
``runtime_checkable``): a runtime without them still runs the TUI, and the TUI leaves out what
they would offer. ``RuleStore`` saves an "allow always" rule to a config file.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from agent.approval import Approve
from agent.events import Event
from server.supervisor import SupervisorStatus

if TYPE_CHECKING:
    from agent.checkpoints import CheckpointStore
    from server.manager import ServerHandle
    from tools.base import ToolContext
    from tools.mcp import McpManager

StatusCallback = Callable[[SupervisorStatus], None]
RuntimeFactory = Callable[[StatusCallback], Awaitable["TuiRuntime"]]


class TuiPolicy(Protocol):
    @property
    def mode(self) -> str:
        """The permission mode's name (a ``PermissionMode`` is one)."""
        ...


class TuiAgent(Protocol):
    # Set by the chat screen when the runtime arrives: the person at the screen answers.
    approve: Approve | None

    @property
    def totals(self) -> dict[str, int]: ...

    @property
    def n_ctx(self) -> int | None: ...

    @property
    def messages(self) -> list[dict[str, Any]]: ...

    @property
    def policy(self) -> TuiPolicy: ...

    @property
    def tool_ctx(self) -> ToolContext | None:
        """The tools' context (workspace, sandbox): ``@file`` reads and ``!command`` runs in it.

        None where there is no workspace (then the TUI offers neither)."""
        ...

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


@runtime_checkable
class RuleStore(Protocol):
    """Optional: where an "allow always" rule can be saved, so later sessions allow it too.

    ``localagent.saved_rules`` does the work for the real runtime; the TUI only asks and shows.
    """

    def rule_targets(self) -> list[tuple[str, Path]]:
        """(label, config file) for each place a rule can be saved, e.g. ("user config", ...),
        ("project config", ...); [] when there is none (then the modal offers no saving)."""
        ...

    def preview_rule(self, rule: str, target: Path) -> str:
        """The change saving would make to ``target``, as a unified diff; raises on a file that
        cannot take it (the message is shown to the person)."""
        ...

    def rule_note(self, target: Path) -> str | None:
        """One line to show before saving when a rule saved in ``target`` would not apply yet
        (a project config that is not approved), else None."""
        ...

    def save_rule(self, rule: str, target: Path) -> None:
        """Add ``rule`` (e.g. ``bash(git status*)``) to the allow list in ``target``; raises OSError
        or ValueError with a message for the person."""
        ...


def rule_store(runtime: object) -> RuleStore | None:
    """The runtime as a ``RuleStore``, or None when it cannot save rules."""
    return runtime if isinstance(runtime, RuleStore) else None
