"""An MCP server that lives in another program, reached through that program's own channel.

Each JSON-RPC message the client sends is handed to a relay, and the reply comes back as the
server's. The Claude Agent SDK's in-process servers (``create_sdk_mcp_server``, ``"type": "sdk"``
in the MCP config it passes) are reached this way, through its ``mcp_message`` control requests.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp_types as types
from mcp.shared.message import SessionMessage

# (server name, JSON-RPC message) -> the JSON-RPC reply (None for a notification).
Relay = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any] | None]]


@asynccontextmanager
async def relay_transport(server: str, relay: Relay) -> AsyncIterator[Any]:
    """The (read, write) streams of an MCP client whose server is behind ``relay``."""
    read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](0)

    async def forward() -> None:
        async with write_reader, read_writer:
            async for outgoing in write_reader:
                body = outgoing.message.model_dump(by_alias=True, mode="json", exclude_unset=True)
                if "id" not in body:  # a notification is acknowledged, not answered
                    with contextlib.suppress(Exception):
                        await relay(server, body)
                    continue
                try:
                    reply = types.jsonrpc_message_adapter.validate_python(await relay(server, body))
                except Exception as exc:  # noqa: BLE001 - no usable answer: the request gets an error one
                    reply = types.jsonrpc_message_adapter.validate_python(_error_reply(body["id"], exc))
                await read_writer.send(SessionMessage(reply))

    async with anyio.create_task_group() as group:
        group.start_soon(forward)
        try:
            yield read_stream, write_stream
        finally:
            group.cancel_scope.cancel()


def _error_reply(request_id: Any, exc: Exception) -> dict[str, Any]:
    """A JSON-RPC error answering ``request_id``, so the client does not wait out its timeout."""
    message = str(exc) or type(exc).__name__
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "error": {"code": -32603, "message": f"no answer through the relay: {message}"},
    }
