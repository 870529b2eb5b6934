"""Assemble an agent from the configuration: the server endpoint (managed or given), the client,
the tools, permissions, project instructions, the session file and checkpoints. Used by
`localagent run` and by the TUI alike."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import httpx2
from openai import AsyncOpenAI

from agent.approval import Approve
from agent.checkpoints import CheckpointStore
from agent.events import Event
from agent.instructions import load_instructions
from agent.loop import Agent, AgentConfig, AgentTool, Recover
from agent.permissions import PermissionPolicy, PermissionRules, sandbox_for
from agent.prompt import session_context, system_prompt
from agent.sessions import SessionStore, SessionWriter, messages_from_events
from agent.speculation_policy import SpeculationPolicy
from localagent.agent_options import (
    AgentOptions,  # also imported from here with build_agent
)
from localagent.context import AppContext
from localagent.endpoint_choice import EndpointChoice, GivenUrl, ManagedProfile, choose_endpoint
from localagent.errors import UsageError
from localagent.model_name import request_model
from localagent.saved_rules import ConfigRuleStore
from server.http import server_root
from server.manager import ServerHandle, fetch_n_ctx
from server.process import probe_health
from server.supervisor import SupervisorStatus
from tools.base import ToolContext
from tools.mcp import McpManager
from tools.mcp.setup import open_mcp
from tools.registry import builtin_tools
from tools.sandbox import SandboxPolicy, sandbox_available, sandbox_note

if TYPE_CHECKING:
    from tools.mcp.relay import Relay

# The user-level instructions file, in the config directory (beside config.toml and mcp.json).
USER_INSTRUCTIONS = "AGENTS.md"
# A long prompt on a slow GPU can take minutes before the first token: that is not a dead server.
CLIENT_TIMEOUT = httpx2.Timeout(connect=10.0, read=1800.0, write=60.0, pool=30.0)


@dataclass
class AgentRuntime:
    agent: Agent
    server: ServerHandle | None
    session_id: str
    checkpoints: CheckpointStore
    base_url: str
    _writer: SessionWriter | None = None
    mcp: McpManager | None = None
    # One line each, for the person: MCP servers skipped or failed.
    notes: list[str] = field(default_factory=list)
    # The key the agent's requests carry, for the front end's own calls to the server (telemetry).
    api_key: str | None = None
    # The `model` every request names (see localagent.model_name).
    model: str = "local"
    # Where the TUI's "allow always" can be saved (tui.runtime.RuleStore); None: session only.
    rules: ConfigRuleStore | None = None

    @property
    def session_file(self) -> Path | None:
        """The session's event file, once the model has answered (it is made then)."""
        return self._writer.path if self._writer is not None else None

    # tui.runtime.RuleStore, through the config files of this workspace.
    def rule_targets(self) -> list[tuple[str, Path]]:
        return self.rules.rule_targets() if self.rules is not None else []

    def preview_rule(self, rule: str, target: Path) -> str:
        return self._rules().preview_rule(rule, target)

    def rule_note(self, target: Path) -> str | None:
        return self._rules().rule_note(target)

    def save_rule(self, rule: str, target: Path) -> None:
        self._rules().save_rule(rule, target)

    def _rules(self) -> ConfigRuleStore:
        if self.rules is None:
            raise ValueError("this session cannot save rules")
        return self.rules

    async def close(self) -> None:
        if self.mcp is not None:
            await self.mcp.close()
        await self.agent.client.close()
        if self._writer is not None:
            self._writer.close()
        if self.server is not None:
            await self.server.close()


def endpoint_choice(ctx: AppContext, options: AgentOptions) -> EndpointChoice:
    """The managed profile or the given URL these options and settings name."""
    server = ctx.settings.server
    return choose_endpoint(
        base_url=options.base_url,
        profile=options.profile,
        configured_url=server.base_url,
        configured_profile=server.profile,
    )


async def connect_endpoint(
    ctx: AppContext, options: AgentOptions, on_status: Callable[[SupervisorStatus], None] | None = None
) -> tuple[str, ServerHandle | None, int | None]:
    """The OpenAI base URL to talk to, the managed server (if any) and n_ctx."""
    choice = endpoint_choice(ctx, options)
    if isinstance(choice, GivenUrl):
        base_url = choice.url
        root = server_root(base_url)
        async with httpx2.AsyncClient() as client:
            health = await probe_health(root, client, ctx.settings.server.api_key)
        if health.state == "down":
            raise UsageError(f"nothing answers at {base_url}; start that server or drop --base-url")
        return f"{root}/v1", None, await fetch_n_ctx(root, ctx.settings.server.api_key)
    manager = ctx.server_manager()
    handle = await manager.start_in_process(choice.name, port=options.port, on_status=on_status)
    n_ctx = handle.record.n_ctx if handle.record else None
    return handle.api_base, handle, n_ctx or await fetch_n_ctx(handle.base_url, manager.api_key)


def make_recover(handle: ServerHandle | None, timeout: float = 300.0) -> Recover | None:
    """After a failed request: wait for the supervisor to have the server serving again."""
    if handle is None or handle.supervisor is None:
        return None
    supervisor = handle.supervisor

    async def recover() -> bool:
        return await supervisor.wait_ready(timeout)

    return recover


@dataclass(frozen=True)
class Endpoint:
    """A server already connected (by ``connect_endpoint``) that several agents share; the agent
    built on it does not own it, and closing that agent leaves it running."""

    base_url: str
    handle: ServerHandle | None
    n_ctx: int | None


# The one place that wires a session together, in the order that keeps failures clean: the
# permission policy, the endpoint, the session file, MCP, checkpoints, the speculation probe.
# long: each step needs the one before it, and splitting them would hide that order.
async def build_agent(
    ctx: AppContext,
    options: AgentOptions,
    on_status: Callable[[SupervisorStatus], None] | None = None,
    *,
    shared: Endpoint | None = None,
    session_id: str | None = None,
    approve: Approve | None = None,
    mcp_relay: Relay | None = None,
) -> AgentRuntime:
    policy, sandbox = permission_policy(ctx, options)
    store = session_store(ctx)
    history, resumed = resumed_history(ctx, store, options.resume)  # bad ids fail first

    # The session file is made only once the model answers: a run that cannot connect leaves no
    # empty session behind to hide the last real one from `undo` and `--resume last`.
    if shared is not None:
        base_url, handle, n_ctx = shared.base_url, shared.handle, shared.n_ctx
    else:
        base_url, handle, n_ctx = await connect_endpoint(ctx, options, on_status)
    model = await request_model(options.model, profile_model_id(ctx, options), base_url, ctx.settings.server.api_key)
    if resumed is not None:
        writer = store.resume(resumed)
    else:
        choice = endpoint_choice(ctx, options)
        where = {"profile": choice.name} if isinstance(choice, ManagedProfile) else {"base_url": choice.url}
        meta = {**where, "model": model}
        writer = store.create(ctx.workspace, meta, session_id=session_id or options.session_id)
    session_id = writer.session_id
    api_key = ctx.settings.server.api_key or "not-needed"
    client = AsyncOpenAI(base_url=base_url, api_key=api_key, timeout=CLIENT_TIMEOUT, max_retries=0)

    scratch = ctx.paths.data / "tool-output" / session_id
    tool_ctx = tool_context(ctx, scratch, sandbox)
    sources = ctx.mcp_sources()
    mcp, notes = await open_mcp(
        dataclasses.replace(sources, strict=options.strict_mcp, relay=mcp_relay),
        options.mcp_config,
        trust=options.trust_project_mcp,
        ask=options.approve_project_mcp,
        scratch_dir=scratch,
    )
    checkpoints = CheckpointStore(ctx.workspace, session_id, ctx.paths.data / "checkpoints")
    tool_ctx.before_write = checkpoints.preserve_before_write
    builtins = [tool for tool in builtin_tools() if options.tools is None or tool.name in options.tools]
    tools = cast("list[AgentTool]", [*builtins, *options.extra_tools, *(mcp.tools() if mcp else [])])
    speculation = await speculation_policy(ctx, base_url)
    agent = assemble_agent(
        ctx,
        options,
        client,
        tools,
        tool_ctx,
        policy,
        n_ctx,
        handle,
        history,
        writer,
        checkpoints,
        model=model,
        speculation=speculation,
    )
    agent.approve = approve  # None: no one to ask (a headless run refuses what would ask)
    server_notes = handle.notes if handle is not None and shared is None else []
    notes += [*server_notes, *(note for note in (sandbox_note(sandbox), checkpoints.notice) if note)]
    return AgentRuntime(
        agent,
        None if shared is not None else handle,
        session_id,
        checkpoints,
        base_url,
        writer,
        mcp,
        notes,
        api_key=api_key,
        model=model,
        rules=None if options.headless else ConfigRuleStore.for_workspace(ctx.paths, ctx.workspace),
    )


async def speculation_policy(ctx: AppContext, base_url: str) -> SpeculationPolicy | None:
    """Per-request drafting where the server honours it (one probe request), unless configured off."""
    if ctx.settings.agent.speculation != "auto":
        return None
    from server.speculation_probe import honours_request_limits

    if await honours_request_limits(server_root(base_url), ctx.settings.server.api_key):
        return SpeculationPolicy()
    return None


def permission_policy(ctx: AppContext, options: AgentOptions) -> tuple[PermissionPolicy, SandboxPolicy]:
    """The permission policy and the bash sandbox of the mode asked for (or configured)."""
    settings = ctx.settings.agent
    mode = options.mode or (settings.headless_mode if options.headless else settings.mode)
    configured = settings.permissions.model_dump()
    # The command line's rules add to the configured ones; deny still wins over allow.
    configured["allow"] = [*configured.get("allow", []), *options.allowed_tools]
    configured["deny"] = [*configured.get("deny", []), *options.disallowed_tools]
    rules = PermissionRules.from_config(configured, tool_names=[tool.name for tool in options.extra_tools])
    if options.sandbox == "off" and mode != "full-auto":
        raise UsageError("--sandbox off goes with --mode full-auto; other modes always run bash sandboxed")
    # The person's sessions, config (an API key) and logs are no command's business.
    hidden = (ctx.paths.data, ctx.paths.config, ctx.paths.state)
    sandbox = sandbox_for(mode, options.sandbox, network=settings.sandbox_network, hidden=hidden)
    policy = PermissionPolicy(mode, rules, bash_sandboxed=sandbox_available(sandbox), mode_hint=options.mode_hint)
    return policy, sandbox


def profile_model_id(ctx: AppContext, options: AgentOptions) -> str | None:
    """The managed profile's ``model_id`` (a --base-url endpoint has no profile)."""
    choice = endpoint_choice(ctx, options)
    if isinstance(choice, GivenUrl):
        return None
    profile = ctx.profiles.get(choice.name)
    return getattr(profile, "model_id", None) if profile is not None else None


def resumed_history(
    ctx: AppContext, store: SessionStore, resume: str | None
) -> tuple[list[dict[str, Any]] | None, str | None]:
    """The conversation of the session to resume and its id; (None, None) for a new session."""
    if not resume:
        return None, None
    header, events = store.open(resume, workspace=ctx.workspace)
    return messages_from_events(events), str(header["session_id"])


def tool_context(ctx: AppContext, scratch: Path, sandbox: SandboxPolicy) -> ToolContext:
    settings = ctx.settings.agent
    return ToolContext(
        workspace=ctx.workspace,
        scratch_dir=scratch,
        env_allow=set(settings.env_allow),
        bash_default_timeout=settings.bash_timeout,
        sandbox=sandbox,
    )


def assemble_agent(
    ctx: AppContext,
    options: AgentOptions,
    client: AsyncOpenAI,
    tools: list[AgentTool],
    tool_ctx: ToolContext,
    policy: PermissionPolicy,
    n_ctx: int | None,
    handle: ServerHandle | None,
    history: list[dict[str, Any]] | None,
    writer: SessionWriter,
    checkpoints: CheckpointStore,
    *,
    model: str = "local",
    speculation: SpeculationPolicy | None = None,
) -> Agent:
    """The agent loop, recording every event to the session and checkpointing before each turn."""
    settings = ctx.settings.agent
    # The user's own AGENTS.md (in the config directory) first, then the workspace's files.
    instructions = load_instructions(
        ctx.workspace, max_bytes=settings.instructions_max_bytes, user_file=ctx.paths.config / USER_INSTRUCTIONS
    )

    async def before_turn(turn: int) -> None:
        await checkpoints.create(f"before turn {turn}")

    def sink(event: Event) -> None:
        writer.append(event.to_dict())

    return Agent(
        client,
        tools,
        tool_ctx,
        policy,
        agent_system_prompt(options),
        AgentConfig(
            model=model,
            max_steps=options.max_steps or settings.max_steps,
            compact_threshold=settings.compact_threshold,
            sampling=request_sampling(ctx, options),
            speculation=speculation,
        ),
        n_ctx=n_ctx,
        recover=make_recover(handle),
        history=history,
        sink=sink,
        before_turn=before_turn,
        context=session_context(ctx.workspace, instructions),
    )


def agent_system_prompt(options: AgentOptions) -> str:
    """localagent's fixed prompt, or the one the caller gave in its place (an empty one keeps
    ours: the Claude Agent SDK passes an empty --system-prompt by default); then what the caller
    appends. The workspace and its instructions come with the first message (agent.prompt)."""
    text = options.system_prompt if options.system_prompt else system_prompt()
    if options.append_system_prompt:
        text += "\n\n" + options.append_system_prompt
    return text


def request_sampling(ctx: AppContext, options: AgentOptions) -> dict[str, Any]:
    """Per-request settings: the agent's max_tokens and, on a managed server, its profile's stops."""
    sampling: dict[str, Any] = {}
    if ctx.settings.agent.max_tokens:
        sampling["max_tokens"] = ctx.settings.agent.max_tokens
    choice = endpoint_choice(ctx, options)
    if isinstance(choice, ManagedProfile):
        profile = ctx.profiles.get(choice.name)
        if profile is not None and profile.stop:
            sampling["stop"] = list(profile.stop)
    return sampling


def session_store(ctx: AppContext) -> SessionStore:
    return SessionStore(ctx.paths.sessions, user_event_types=frozenset({"turn_started"}))
