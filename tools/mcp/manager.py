"""All configured MCP servers of a session: start them together, expose their tools, close them.

A server that fails to start is reported in `states()` and skipped; the others and the agent
go on. The tool list is fixed once started: it is part of the prompt the model server caches.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from tools.mcp.client import ServerConnection, StateName
from tools.mcp.config import ServerConfig, Transport
from tools.mcp.names import unique_tool_names
from tools.mcp.relay import Relay
from tools.mcp.tool_adapter import McpTool

# The SDK logs transport trouble itself; without a handler Python would print it on stderr.
_SDK_LOGGER = "mcp"


@dataclass(frozen=True)
class ServerState:
    name: str
    transport: Transport
    state: StateName
    tool_count: int
    error: str | None = None
    source: str = ""
    log_path: Path | None = None


class McpManager:
    def __init__(
        self,
        configs: Sequence[ServerConfig],
        log_dir: Path,
        scratch_dir: Path,
        *,
        cwd: Path | None = None,
        relay: Relay | None = None,
    ) -> None:
        self.log_dir = log_dir
        self.scratch_dir = scratch_dir
        self.connections = [ServerConnection(config, log_dir, cwd=cwd, relay=relay) for config in configs]
        self._tools: list[McpTool] = []
        self._log_handler: logging.Handler | None = None
        self._started = False

    async def __aenter__(self) -> McpManager:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def start(self) -> None:
        if self._started:
            return
        self._started = True
        self._route_sdk_logs()
        try:
            await asyncio.gather(*(connection.start() for connection in self.connections))
        except BaseException:
            await self.close()
            raise
        ready = [c for c in self.connections if c.state == "ready"]
        pairs = [(c.name, remote.name) for c in ready for remote in c.tools]
        names = iter(unique_tool_names(pairs))
        self._tools = [McpTool(c, remote, next(names), self.scratch_dir) for c in ready for remote in c.tools]

    async def close(self) -> None:
        await asyncio.gather(*(connection.close() for connection in self.connections), return_exceptions=True)
        if self._log_handler is not None:
            logger = logging.getLogger(_SDK_LOGGER)
            logger.removeHandler(self._log_handler)
            self._log_handler.close()
            self._log_handler = None
            if not logger.handlers:
                logger.propagate = True

    def tools(self) -> list[McpTool]:
        return list(self._tools)

    def states(self) -> list[ServerState]:
        return [
            ServerState(
                name=c.name,
                transport=c.config.transport,
                state=c.state,
                tool_count=len(c.tools),
                error=c.error,
                source=c.config.source,
                log_path=c.log_path if c.config.transport == "stdio" else None,
            )
            for c in self.connections
        ]

    def problems(self) -> list[str]:
        """One line per server that did not start, for the person running the agent."""
        return [f"MCP server {c.name} failed to start: {c.error}" for c in self.connections if c.state == "failed"]

    def _route_sdk_logs(self) -> None:
        try:
            self.log_dir.mkdir(parents=True, exist_ok=True)
            handler: logging.Handler = logging.FileHandler(self.log_dir / "mcp-client.log", encoding="utf-8")
        except OSError:
            handler = logging.NullHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        logger = logging.getLogger(_SDK_LOGGER)
        logger.addHandler(handler)
        # Never to the terminal: a TUI would be painted over, a headless run would print tracebacks.
        logger.propagate = False
        self._log_handler = handler
