"""The ACP agent: the protocol's methods on top of localagent's sessions.

A plain class, not a subclass of ``acp.Agent``: the SDK answers a method the class lacks with
"method not found", where a subclass would answer it with an empty success.
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import acp
from acp import RequestError, text_block, update_agent_message_text, update_user_message_text
from acp.schema import (
    AgentCapabilities,
    HttpMcpServer,
    Implementation,
    InitializeResponse,
    LoadSessionResponse,
    McpCapabilities,
    McpServerStdio,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
    SessionMode,
    SessionModeState,
    SetSessionModeResponse,
    SseMcpServer,
)

from agent.permissions import MODE_NAMES
from agent.sessions import SessionError, new_session_id
from localagent.acp import updates
from localagent.acp.prompt_text import prompt_text
from localagent.acp.session import AcpSession
from localagent.agent_options import AgentOptions
from localagent.agent_setup import Endpoint, build_agent, connect_endpoint, session_store
from localagent.context import AppContext
from localagent.errors import LocalAgentError
from localagent.version import package_version

MODE_DESCRIPTIONS = {
    "read-only": "reads and searches; never writes or runs commands",
    "ask": "asks before every write and command",
    "auto-edit": "edits files in the workspace; asks before commands",
    "full-auto": "edits and runs commands (bash sandboxed) without asking",
}


class LocalAgentAcp:
    def __init__(self, options: AgentOptions) -> None:
        self.options = options
        self.conn: Any = None
        self.sessions: dict[str, AcpSession] = {}
        # One server for every session of this process, started by the first.
        self._endpoint: Endpoint | None = None
        self._endpoint_lock = asyncio.Lock()
        self._load_lock = asyncio.Lock()

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    async def initialize(
        self, protocol_version: int, client_capabilities: Any = None, client_info: Any = None, **kwargs: Any
    ) -> InitializeResponse:
        return InitializeResponse(
            protocol_version=acp.PROTOCOL_VERSION,
            agent_capabilities=AgentCapabilities(
                load_session=True,
                prompt_capabilities=PromptCapabilities(image=False, audio=False, embedded_context=True),
                mcp_capabilities=McpCapabilities(http=True, sse=True),
            ),
            agent_info=Implementation(name="localagent", title="localagent", version=package_version()),
            auth_methods=[],
        )

    async def new_session(self, cwd: str, mcp_servers: list[Any] | None = None, **kwargs: Any) -> NewSessionResponse:
        session = self._open(cwd, mcp_servers, resume=None, session_id=new_session_id())
        return NewSessionResponse(session_id=session.session_id, modes=_modes(session.mode))

    async def load_session(
        self, cwd: str, session_id: str, mcp_servers: list[Any] | None = None, **kwargs: Any
    ) -> LoadSessionResponse:
        """The saved session, its conversation replayed to the editor before the answer."""
        ctx = _context(cwd)
        async with self._load_lock:  # two loads of one session must not both keep an agent
            try:
                header, events = session_store(ctx).open(session_id, workspace=ctx.workspace)
            except SessionError as exc:
                raise RequestError.resource_not_found(f"session {session_id}: {exc}") from None
            # The exact id (not "last" or a prefix), of this workspace: one live agent per file.
            if str(header.get("session_id")) != session_id or header.get("workspace") != str(ctx.workspace):
                raise RequestError.resource_not_found(f"session {session_id} (of this workspace, by its full id)")
            try:
                shown = _history_updates(events, ctx.workspace)
            except (TypeError, AttributeError, KeyError, ValueError):
                raise RequestError.invalid_params({"message": f"session {session_id}: its file is damaged"}) from None
            old = self.sessions.pop(session_id, None)
            if old is not None:
                await old.close()
            session = self._open(cwd, mcp_servers, resume=session_id, session_id=session_id)
        for update in shown:
            await self.conn.session_update(session_id, update)
        return LoadSessionResponse(modes=_modes(session.mode))

    async def set_session_mode(self, session_id: str, mode_id: str, **kwargs: Any) -> SetSessionModeResponse:
        if mode_id not in MODE_NAMES:
            raise RequestError.invalid_params({"modeId": mode_id, "known": list(MODE_NAMES)})
        self._session(session_id).set_mode(mode_id)
        return SetSessionModeResponse()

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        text = prompt_text(prompt)
        if not text.strip():
            raise RequestError.invalid_params({"message": "the prompt has no text"})
        return await self._session(session_id).prompt(text)

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        session = self.sessions.get(session_id)
        if session is not None:
            session.cancel()

    async def close(self) -> None:
        for session in list(self.sessions.values()):
            await session.close()
        if self._endpoint is not None and self._endpoint.handle is not None:
            await self._endpoint.handle.close()

    # -- sessions ---------------------------------------------------------------------------------

    def _session(self, session_id: str) -> AcpSession:
        session = self.sessions.get(session_id)
        if session is None:
            raise RequestError.invalid_params({"sessionId": session_id, "message": "no such session"})
        return session

    def _open(self, cwd: str, mcp_servers: list[Any] | None, *, resume: str | None, session_id: str) -> AcpSession:
        ctx = _context(cwd)
        options = _options_for(self.options, resume, mcp_servers, ctx)
        mode = options.mode or ctx.settings.agent.mode
        session = AcpSession(session_id, mode, self._sender(session_id), self._asker(session_id))
        session.building = asyncio.ensure_future(self._build(ctx, options, session, session_id))
        self.sessions[session_id] = session
        return session

    async def _build(self, ctx: AppContext, options: AgentOptions, session: AcpSession, session_id: str):
        async with self._endpoint_lock:
            if self._endpoint is None:
                base_url, handle, n_ctx = await connect_endpoint(ctx, options, session.on_status)
                self._endpoint = Endpoint(base_url, handle, n_ctx)
        try:
            return await build_agent(
                ctx, options, session.on_status, shared=self._endpoint, session_id=session_id, approve=session.approve
            )
        finally:
            # The editor's MCP servers are read by now; their file holds tokens and is not kept.
            if options.mcp_config is not None and options.mcp_config != self.options.mcp_config:
                options.mcp_config.unlink(missing_ok=True)

    def _sender(self, session_id: str):
        async def send(update: Any, meta: dict[str, Any]) -> None:
            await self.conn.session_update(session_id, update, **meta)

        return send

    def _asker(self, session_id: str):
        async def ask(call: Any) -> Any:
            from localagent.acp.session import PERMISSION_OPTIONS

            return await self.conn.request_permission(session_id=session_id, tool_call=call, options=PERMISSION_OPTIONS)

        return ask


def _context(cwd: str) -> AppContext:
    path = Path(cwd)
    if not path.is_absolute() or not path.is_dir():
        raise RequestError.invalid_params({"cwd": cwd, "message": "cwd must be an absolute path to a directory"})
    try:
        return AppContext.load(path)
    except LocalAgentError as exc:
        raise RequestError.invalid_params({"cwd": cwd, "message": str(exc)}) from None


def _modes(current: str) -> SessionModeState:
    return SessionModeState(
        current_mode_id=current,
        available_modes=[SessionMode(id=m, name=m, description=MODE_DESCRIPTIONS.get(m)) for m in MODE_NAMES],
    )


def _options_for(
    base: AgentOptions, resume: str | None, mcp_servers: list[Any] | None, ctx: AppContext
) -> AgentOptions:
    from dataclasses import replace

    options = replace(base, resume=resume)
    if mcp_servers:
        # The editor's servers are the person's own configuration, as a --mcp-config file is.
        options.mcp_config = _mcp_config_file(mcp_servers, ctx, base.mcp_config)
    return options


def _mcp_config_file(servers: list[Any], ctx: AppContext, given: Path | None) -> Path:
    """One file with the --mcp-config servers (if any) and the editor's, the editor's winning a
    name both use."""
    entries: dict[str, Any] = {}
    if given is not None:
        try:
            entries.update(json.loads(given.expanduser().read_text(encoding="utf-8")).get("mcpServers") or {})
        except (OSError, ValueError, AttributeError) as exc:
            raise RequestError.invalid_params({"message": f"--mcp-config {given}: {exc}"}) from None
    for server in servers:
        if isinstance(server, McpServerStdio):
            entries[server.name] = {
                "command": server.command,
                "args": list(server.args),
                "env": {e.name: e.value for e in server.env},
            }
        elif isinstance(server, HttpMcpServer | SseMcpServer):
            entries[server.name] = {
                "type": server.type,
                "url": server.url,
                "headers": {h.name: h.value for h in server.headers},
            }
    directory = ctx.paths.state / "acp"
    directory.mkdir(parents=True, exist_ok=True)
    # Private from the start: headers and environment may carry tokens.
    fd, name = tempfile.mkstemp(suffix=".json", dir=directory)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump({"mcpServers": entries}, handle)
    return Path(name)


def _history_updates(events: list[dict[str, Any]], workspace: Path) -> list[Any]:
    """The saved conversation as the updates that showed it: the person's messages, the answers,
    and each tool call with its result."""
    from agent.sessions import messages_from_events
    from tui.attachments import typed_part

    shown: list[Any] = []
    for message in messages_from_events(events):
        role, content = message.get("role"), message.get("content")
        text = content if isinstance(content, str) else ""
        if role == "user" and text and not text.startswith("[localagent]"):
            shown.append(update_user_message_text(typed_part(text)))
        elif role == "assistant":
            if text:
                shown.append(update_agent_message_text(text))
            for call in message.get("tool_calls") or []:
                function = call.get("function") or {}
                try:
                    arguments = json.loads(function.get("arguments") or "{}")
                except ValueError:
                    arguments = {}
                name = str(function.get("name") or "tool")
                shown.append(
                    acp.start_tool_call(
                        str(call.get("id")),
                        name,
                        kind=updates.tool_kind(name),
                        status="completed",
                        locations=updates.locations(arguments if isinstance(arguments, dict) else {}, workspace)
                        or None,
                        raw_input=arguments,
                    )
                )
        elif role == "tool":
            shown.append(
                acp.update_tool_call(
                    str(message.get("tool_call_id")),
                    status="completed",
                    content=[acp.tool_content(text_block(text[: updates.MAX_OUTPUT_CHARS]))] if text else None,
                )
            )
    return shown
