"""Assemble an agent from the configuration: the server endpoint (managed or given), the client,
the tools, permissions, project instructions, the session file and checkpoints. Used by
`localagent run` and by the TUI alike."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
from openai import AsyncOpenAI

from agent.checkpoints import CheckpointStore
from agent.events import Event
from agent.instructions import load_instructions
from agent.loop import Agent, AgentConfig, AgentTool
from agent.permissions import PermissionPolicy, PermissionRules
from agent.prompt import system_prompt
from agent.session_store import SessionStore
from localagent.context import AppContext
from localagent.errors import UsageError
from localagent.mcp_commands import open_mcp
from server.manager import ServerHandle, fetch_n_ctx
from server.process import probe_health
from server.profiles import DEFAULT_PROFILE
from server.supervisor import ServerState, SupervisorStatus
from tools.base import ToolContext
from agent.sandbox_modes import sandbox_for
from tools.sandbox import sandbox_available, sandbox_note
from tools.mcp import AskApproval, McpManager
from tools.registry import builtin_tools

# A long prompt on a slow GPU can take minutes before the first token: that is not a dead server.
CLIENT_TIMEOUT = httpx2.Timeout(connect=10.0, read=1800.0, write=60.0, pool=30.0)


@dataclass
class AgentOptions:
    profile: str | None = None
    base_url: str | None = None
    mode: str | None = None
    max_steps: int | None = None
    resume: str | None = None
    headless: bool = False
    port: int | str | None = None
    extra_tools: list[AgentTool] = field(default_factory=list)
    mcp_config: Path | None = None
    trust_project_mcp: bool = False
    # The TUI's way to ask about a repo's own .mcp.json servers; without it they are skipped.
    approve_project_mcp: AskApproval | None = None
    sandbox: str | None = None  # "off" only with full-auto; None keeps the mode's sandbox


@dataclass
class AgentRuntime:
    agent: Agent
    server: ServerHandle | None
    session_id: str
    checkpoints: CheckpointStore
    base_url: str
    _writer: Any = None
    mcp: McpManager | None = None
    # One line each, for the person: MCP servers skipped or failed.
    notes: list[str] = field(default_factory=list)

    async def close(self) -> None:
        if self.mcp is not None:
            await self.mcp.close()
        await self.agent.client.close()
        if self._writer is not None:
            self._writer.close()
        if self.server is not None:
            await self.server.close()


async def connect_endpoint(
    ctx: AppContext, options: AgentOptions, on_status: Callable[[SupervisorStatus], None] | None = None
) -> tuple[str, ServerHandle | None, int | None]:
    """The OpenAI base URL to talk to, the managed server (if any) and n_ctx."""
    base_url = options.base_url or ctx.settings.server.base_url
    if base_url:
        root = base_url.rstrip("/").removesuffix("/v1")
        async with httpx2.AsyncClient() as client:
            health = await probe_health(root, client, ctx.settings.server.api_key)
        if health.state == "down":
            raise UsageError(f"nothing answers at {base_url}; start that server or drop --base-url")
        return f"{root}/v1", None, await fetch_n_ctx(root, ctx.settings.server.api_key)
    manager = ctx.server_manager()
    profile = options.profile or ctx.settings.server.profile
    handle = await manager.start_in_process(profile, port=options.port, on_status=on_status)
    n_ctx = handle.record.n_ctx if handle.record else None
    return handle.api_base, handle, n_ctx or await fetch_n_ctx(handle.base_url, manager.api_key)


def make_recover(handle: ServerHandle | None, timeout: float = 300.0):
    """After a failed request: wait for the supervisor to have the server serving again."""
    if handle is None or handle.supervisor is None:
        return None
    supervisor = handle.supervisor

    async def recover() -> bool:
        deadline = time.monotonic() + timeout
        async with httpx2.AsyncClient() as client:
            while time.monotonic() < deadline:
                status = supervisor.status
                if status.state == ServerState.FAILED:
                    return False
                if status.state == ServerState.READY and supervisor.process.running:
                    if (await probe_health(supervisor.base_url, client, supervisor.api_key)).state == "ready":
                        return True
                await asyncio.sleep(0.2)
        return False

    return recover


async def build_agent(
    ctx: AppContext,
    options: AgentOptions,
    on_status: Callable[[SupervisorStatus], None] | None = None,
) -> AgentRuntime:
    settings = ctx.settings.agent
    mode = options.mode or (settings.headless_mode if options.headless else settings.mode)
    rules = PermissionRules.from_config(settings.permissions.model_dump())
    if options.sandbox == "off" and mode != "full-auto":
        raise UsageError("--sandbox off goes with --mode full-auto; other modes always run bash sandboxed")
    sandbox = sandbox_for(mode, options.sandbox, network=settings.sandbox_network)
    policy = PermissionPolicy(mode, rules, bash_sandboxed=sandbox_available(sandbox))

    store = session_store(ctx)
    history = None
    resumed: str | None = None
    if options.resume:
        header, events = store.open(options.resume, workspace=ctx.workspace)  # bad ids fail first
        history = messages_from_events(events)
        resumed = str(header["session_id"])

    # The session file is made only once the model answers: a run that cannot connect leaves no
    # empty session behind to hide the last real one from `undo` and `--resume last`.
    base_url, handle, n_ctx = await connect_endpoint(ctx, options, on_status)
    if resumed is not None:
        writer = store.resume(resumed)
    else:
        writer = store.create(ctx.workspace, {"profile": options.profile or ctx.settings.server.profile})
    session_id = writer.session_id
    api_key = ctx.settings.server.api_key or "not-needed"
    client = AsyncOpenAI(base_url=base_url, api_key=api_key, timeout=CLIENT_TIMEOUT, max_retries=0)

    scratch = ctx.paths.data / "tool-output" / session_id
    tool_ctx = ToolContext(
        workspace=ctx.workspace,
        scratch_dir=scratch,
        env_allow=set(settings.env_allow),
        bash_default_timeout=settings.bash_timeout,
        sandbox=sandbox,
    )
    mcp, notes = await open_mcp(
        ctx, options.mcp_config, trust=options.trust_project_mcp, ask=options.approve_project_mcp, scratch_dir=scratch
    )
    instructions = load_instructions(ctx.workspace, max_bytes=settings.instructions_max_bytes)
    checkpoints = CheckpointStore(ctx.workspace, session_id, ctx.paths.data / "checkpoints")
    tool_ctx.before_write = checkpoints.preserve_before_write

    async def before_turn(turn: int) -> None:
        await checkpoints.create(f"before turn {turn}")

    def sink(event: Event) -> None:
        writer.append(event.to_dict())

    agent = Agent(
        client,
        [*builtin_tools(), *options.extra_tools, *(mcp.tools() if mcp else [])],
        tool_ctx,
        policy,
        system_prompt(ctx.workspace, instructions),
        AgentConfig(
            model="local",
            max_steps=options.max_steps or settings.max_steps,
            compact_threshold=settings.compact_threshold,
            headless=options.headless,
            sampling=request_sampling(ctx, options),
        ),
        n_ctx=n_ctx,
        recover=make_recover(handle),
        history=history,
        sink=sink,
        before_turn=before_turn,
    )
    note = sandbox_note(sandbox)
    if note:
        notes.append(note)
    return AgentRuntime(agent, handle, session_id, checkpoints, base_url, writer, mcp, notes)


def request_sampling(ctx: AppContext, options: AgentOptions) -> dict[str, Any]:
    """Per-request settings: the agent's max_tokens and, on a managed server, its profile's stops."""
    sampling: dict[str, Any] = {}
    if ctx.settings.agent.max_tokens:
        sampling["max_tokens"] = ctx.settings.agent.max_tokens
    if not (options.base_url or ctx.settings.server.base_url):
        profile = ctx.profiles.get(options.profile or ctx.settings.server.profile or DEFAULT_PROFILE)
        if profile is not None and profile.stop:
            sampling["stop"] = list(profile.stop)
    return sampling


def session_store(ctx: AppContext) -> SessionStore:
    return SessionStore(ctx.paths.sessions, user_event_types=frozenset({"turn_started"}))


INTERRUPTED_RESULT = "Error: interrupted: the run ended before this call finished; its effects are unknown."


def messages_from_events(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The conversation as it was: appended messages, with compactions applied in order, and
    repaired where the run was killed mid-call (see ``repair_interrupted_calls``)."""
    messages: list[dict[str, Any]] = []
    for event in events:
        if event.get("type") == "message":
            messages.append(event["message"])
        elif event.get("type") == "history_replaced":
            messages = list(event["messages"])
    return repair_interrupted_calls(messages)


def repair_interrupted_calls(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """After SIGKILL or a crash the history can end in (or hold) an assistant tool call with no
    tool result; a server rejects or misreads that. Each such call gets an "interrupted" result
    right after its assistant message, in call order."""
    repaired: list[dict[str, Any]] = []
    index = 0
    while index < len(messages):
        message = messages[index]
        repaired.append(message)
        index += 1
        calls = message.get("tool_calls") if message.get("role") == "assistant" else None
        if not calls:
            continue
        answered: set[str] = set()
        while index < len(messages) and messages[index].get("role") == "tool":
            answered.add(str(messages[index].get("tool_call_id")))
            repaired.append(messages[index])
            index += 1
        for call in calls:
            if str(call.get("id")) not in answered:
                repaired.append({"role": "tool", "tool_call_id": call.get("id"), "content": INTERRUPTED_RESULT})
    return repaired
