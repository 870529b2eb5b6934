"""A test client for ``localagent acp``: the SDK's own client side over a real subprocess, keeping
every update it is sent and answering permission requests from a list the test gives."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, RequestError, spawn_agent_process
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    DeniedOutcome,
    Implementation,
    RequestPermissionResponse,
)


@dataclass
class RecordingClient:
    # What to answer each permission request with, in order: an option id, or "cancelled".
    answers: list[str] = field(default_factory=list)
    updates: list[tuple[str, Any, dict[str, Any]]] = field(default_factory=list)
    permissions: list[Any] = field(default_factory=list)
    asked: asyncio.Event = field(default_factory=asyncio.Event)
    # Set by a test to hold a permission request open until the turn is cancelled.
    hold: asyncio.Event | None = None

    async def session_update(self, session_id: str, update: Any, **meta: Any) -> None:
        self.updates.append((session_id, update, meta))

    async def request_permission(self, session_id: str, tool_call: Any, options: list[Any], **kwargs: Any):
        self.permissions.append((tool_call, [o.option_id for o in options]))
        self.asked.set()
        if self.hold is not None:
            await self.hold.wait()
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        answer = self.answers.pop(0) if self.answers else "deny"
        if answer == "cancelled":
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=answer))

    async def read_text_file(self, *args: Any, **kwargs: Any):
        raise RequestError.method_not_found("fs/read_text_file")

    async def write_text_file(self, *args: Any, **kwargs: Any):
        raise RequestError.method_not_found("fs/write_text_file")

    async def ext_method(self, method: str, params: dict) -> dict:
        raise RequestError.method_not_found(method)

    async def ext_notification(self, method: str, params: dict) -> None:
        return None

    def of_kind(self, kind: str) -> list[Any]:
        return [u for _sid, u, _meta in self.updates if u.session_update == kind]

    def text(self, kind: str = "agent_message_chunk") -> str:
        return "".join(u.content.text for u in self.of_kind(kind))


@contextlib.asynccontextmanager
async def acp_agent(
    env: dict[str, str], cwd: Path, *args: str, client: RecordingClient | None = None
) -> AsyncIterator[tuple[Any, RecordingClient, Any]]:
    client = client or RecordingClient()
    async with spawn_agent_process(
        client,
        sys.executable,
        "-m",
        "localagent.cli",
        "acp",
        *args,
        env=env,
        cwd=str(cwd),
        transport_kwargs={"stderr": None, "limit": 50 * 1024 * 1024},
    ) as (conn, process):
        await asyncio.wait_for(
            conn.initialize(
                protocol_version=PROTOCOL_VERSION,
                client_capabilities=ClientCapabilities(),
                client_info=Implementation(name="test", version="1"),
            ),
            60,
        )
        yield conn, client, process
