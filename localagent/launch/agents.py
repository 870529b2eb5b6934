"""The agents ``localagent launch`` runs, one record each: what to run, how to install it, how it
says its version, the settings that point it at a local server with nothing sent elsewhere, and
the headless command line that makes it send its first model request (to measure that request).

Each agent's settings go in its environment or its command line only: nothing is written to the
agent's own configuration files, so running it without ``localagent launch`` is unchanged.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

# What an agent sends as its key when the server wants none: each agent insists on having one.
PLACEHOLDER_KEY = "localagent"
# The prompt of the measuring run: short, so the agent's own prompt is nearly all of the request.
MEASURE_PROMPT = "Say hello."
# Codex reads its provider's key from the variable its provider names (env_key).
CODEX_KEY_VARIABLE = "LOCAL_LLAMA_API_KEY"
CODEX_PROVIDER = "localagent"
OPENCODE_PROVIDER = "localagent"
# The longest answer an agent asks for: Claude Code asks for 32,000 tokens by default, and a small
# model that loops on its answer would fill a 32k context with it before the next turn fails.
MAX_ANSWER_TOKENS = 8192


@dataclass(frozen=True)
class AgentEndpoint:
    """Where an agent sends its model requests: the managed server, or a meter in front of it."""

    base_url: str  # the server's root, without /v1
    api_key: str | None
    model: str  # the name the server answers to
    context_tokens: int | None = None  # per slot, when known


def answer_budget(context_tokens: int) -> int:
    """The longest answer to ask for: MAX_ANSWER_TOKENS, or a quarter of a smaller context."""
    return min(MAX_ANSWER_TOKENS, context_tokens // 4)


@dataclass(frozen=True)
class AgentSettings:
    """What an agent needs to talk to an endpoint: variables to set and to remove, and arguments
    that go before the person's own."""

    env: dict[str, str]
    args: list[str] = field(default_factory=list)
    unset: tuple[str, ...] = ()

    def environment(self, base: Mapping[str, str]) -> dict[str, str]:
        """``base`` (the caller's environment) with these settings applied."""
        merged = {name: value for name, value in base.items() if name not in self.unset}
        return merged | self.env


@dataclass(frozen=True)
class Agent:
    name: str
    executable: str
    install: str  # one command line that installs it
    version_args: tuple[str, ...]
    settings: Callable[[AgentEndpoint], AgentSettings]
    # After the executable and the settings' arguments: one headless turn on MEASURE_PROMPT.
    measure_args: tuple[str, ...]

    def measure_command(self, prompt: str = MEASURE_PROMPT) -> list[str]:
        """``measure_args`` with ``prompt`` as the turn's prompt."""
        return [prompt if arg == MEASURE_PROMPT else arg for arg in self.measure_args]


def claude_settings(endpoint: AgentEndpoint) -> AgentSettings:
    # Setting names from Claude Code's documented environment variables (code.claude.com/docs/en/env-vars).
    model = endpoint.model
    env = {
        "ANTHROPIC_BASE_URL": endpoint.base_url,
        # Sent as "Authorization: Bearer", which llama-server checks.
        "ANTHROPIC_AUTH_TOKEN": endpoint.api_key or PLACEHOLDER_KEY,
        "ANTHROPIC_MODEL": model,
        # Every alias Claude Code may pick on its own (the small fast model, subagents) is ours.
        "ANTHROPIC_DEFAULT_OPUS_MODEL": model,
        "ANTHROPIC_DEFAULT_SONNET_MODEL": model,
        "ANTHROPIC_DEFAULT_HAIKU_MODEL": model,
        "ANTHROPIC_SMALL_FAST_MODEL": model,  # the older name of the Haiku alias
        "CLAUDE_CODE_SUBAGENT_MODEL": model,
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        # A long prompt's first prefill on a local GPU can outlast the default ten minutes.
        "API_TIMEOUT_MS": "3600000",
    }
    if endpoint.context_tokens:
        # Claude Code takes a model id it does not know for a 1M-token model, and would fill the
        # server's context long before it compacts; its own notice for such an id names this
        # setting (CLAUDE_CODE_AUTO_COMPACT_WINDOW would not do: it reads anything under 100k as 100k).
        env["CLAUDE_CODE_MAX_CONTEXT_TOKENS"] = str(endpoint.context_tokens)
        env["CLAUDE_CODE_MAX_OUTPUT_TOKENS"] = str(answer_budget(endpoint.context_tokens))
    # A key of the person's would go out as X-Api-Key beside ours, and a cloud switch would send
    # the requests to that cloud instead.
    unset = ("ANTHROPIC_API_KEY", "CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX", "CLAUDE_CODE_USE_FOUNDRY")
    return AgentSettings(env=env, unset=unset)


def codex_settings(endpoint: AgentEndpoint) -> AgentSettings:
    # Codex's documented config keys, given as -c overrides (developers.openai.com/codex/config-reference).
    # Codex speaks only the Responses API to a custom provider now (wire_api "chat" was removed),
    # which llama-server serves at /v1/responses.
    provider = {
        "name": "localagent",
        "base_url": f"{endpoint.base_url}/v1",
        "wire_api": "responses",
        "env_key": CODEX_KEY_VARIABLE,
    }
    inline = ", ".join(f"{key} = {json.dumps(value)}" for key, value in provider.items())
    args = [
        "-c",
        f"model_providers.{CODEX_PROVIDER}={{ {inline} }}",
        "-c",
        f'model_provider="{CODEX_PROVIDER}"',
        "-m",
        endpoint.model,
        "-c",
        "check_for_update_on_startup=false",
        "-c",
        "analytics.enabled=false",
    ]
    if endpoint.context_tokens:
        # So Codex compacts its history before the server's context is full, not at its default.
        args += ["-c", f"model_context_window={endpoint.context_tokens}"]
    return AgentSettings(env={CODEX_KEY_VARIABLE: endpoint.api_key or PLACEHOLDER_KEY}, args=args)


def opencode_settings(endpoint: AgentEndpoint) -> AgentSettings:
    # opencode's documented config (opencode.ai/docs/config), given whole in OPENCODE_CONFIG_CONTENT,
    # which opencode merges over the person's own files.
    model: dict[str, object] = {"name": endpoint.model, "tool_call": True}
    if endpoint.context_tokens:
        model["limit"] = {"context": endpoint.context_tokens, "output": answer_budget(endpoint.context_tokens)}
    config = {
        "$schema": "https://opencode.ai/config.json",
        "provider": {
            OPENCODE_PROVIDER: {
                "npm": "@ai-sdk/openai-compatible",
                "name": "localagent",
                "options": {"baseURL": f"{endpoint.base_url}/v1", "apiKey": endpoint.api_key or PLACEHOLDER_KEY},
                "models": {endpoint.model: model},
            }
        },
        "model": f"{OPENCODE_PROVIDER}/{endpoint.model}",
        "small_model": f"{OPENCODE_PROVIDER}/{endpoint.model}",
        "autoupdate": False,
        "share": "disabled",
    }
    env = {
        "OPENCODE_CONFIG_CONTENT": json.dumps(config),
        "OPENCODE_DISABLE_AUTOUPDATE": "1",
        # Read by opencode's models.dev loader: no catalog download at start (it works offline).
        "OPENCODE_DISABLE_MODELS_FETCH": "1",
    }
    return AgentSettings(env=env)


AGENTS: dict[str, Agent] = {
    agent.name: agent
    for agent in (
        Agent(
            name="claude",
            executable="claude",
            install="npm install -g @anthropic-ai/claude-code",
            version_args=("--version",),
            settings=claude_settings,
            measure_args=("-p", MEASURE_PROMPT),
        ),
        Agent(
            name="codex",
            executable="codex",
            install="npm install -g @openai/codex",
            version_args=("--version",),
            settings=codex_settings,
            # Outside a git repository too, and leaving no session file behind.
            measure_args=("exec", "--skip-git-repo-check", "--ephemeral", MEASURE_PROMPT),
        ),
        Agent(
            name="opencode",
            executable="opencode",
            install="npm install -g opencode-ai",
            version_args=("--version",),
            settings=opencode_settings,
            measure_args=("run", MEASURE_PROMPT),
        ),
    )
}
