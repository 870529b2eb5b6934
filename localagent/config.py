"""Typed configuration: the user file, then the project's ``.localagent.toml`` (only what narrows,
until the user approves the file: see ``workspace_trust``), then ``LOCALAGENT_*`` environment
variables; later sources override earlier ones."""

from __future__ import annotations

import os
import stat
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    SettingsError,
)

from agent.defaults import COMPACT_THRESHOLD, MAX_STEPS
from agent.permissions import PermissionMode
from localagent.errors import ConfigError
from localagent.urls import url_problem
from localagent.workspace_trust import (
    DEFAULT_MODES,
    file_digest,
    narrow_workspace_layer,
)
from server.defaults import DEFAULT_PORT, DEFAULT_PROFILE, STARTUP_TIMEOUT_S
from server.profile_loading import deep_merge
from tools.defaults import BASH_TIMEOUT_SECONDS
from tools.mcp.approvals import ApprovalStore

PROJECT_FILE = ".localagent.toml"
ENV_PREFIX = "LOCALAGENT_"


# Each field's docstring is its description: docs/reference/config.md is generated from them.
_DOCUMENTED = ConfigDict(extra="forbid", use_attribute_docstrings=True)


class ServerSettings(BaseModel):
    """Which server the agent talks to, and how localagent runs it."""

    model_config = _DOCUMENTED

    binary: Path | None = None
    """The llama-server to run; unset: `LOCALAGENT_LLAMA_SERVER`, then the newest build that passed
    its smoke test here, then `PATH`."""
    profile: str = DEFAULT_PROFILE
    """The profile started when none is named."""
    host: str | None = None
    """Address the managed server listens on; unset: loopback."""
    port: int = Field(default=DEFAULT_PORT, ge=1, le=65535)
    """Port the managed server listens on."""
    api_key: str | None = None
    """API key the managed server requires, and the agent sends (also to `base_url`)."""
    startup_timeout: float = Field(default=STARTUP_TIMEOUT_S, gt=0)
    """Seconds to wait for a starting server's `/health` (a first start may download a model first)."""
    base_url: str | None = None
    """An OpenAI-compatible endpoint to use instead of a managed server (Ollama, llama-swap, LM
    Studio, a remote llama-server)."""

    @field_validator("base_url")
    @classmethod
    def _usable_url(cls, value: str | None) -> str | None:
        problem = None if value is None else url_problem(value)
        if problem is not None:
            raise ValueError(f"{value!r} {problem}")
        return value


class PermissionSettings(BaseModel):
    """Rules that decide tool calls before the mode does (deny wins, then ask, then allow)."""

    model_config = _DOCUMENTED

    allow: list[str] = []
    """Calls run without asking, e.g. `"bash(python -m pytest*)"`, `"edit(src/**)"`."""
    ask: list[str] = []
    """Calls that always ask, whatever the mode."""
    deny: list[str] = []
    """Calls refused, whatever the mode, e.g. `"bash(git push*)"`."""


class AgentSettings(BaseModel):
    """How the agent works in a workspace."""

    model_config = _DOCUMENTED

    # A mode's name ("ask"), as PermissionMode spells it; compares equal to that string.
    mode: PermissionMode = DEFAULT_MODES["mode"]
    """Permission mode of the TUI and editors: `read-only`, `ask`, `auto-edit` or `full-auto`."""
    headless_mode: PermissionMode = DEFAULT_MODES["headless_mode"]
    """Permission mode of `localagent run`, where nobody can be asked."""
    max_steps: int = Field(default=MAX_STEPS, ge=1)
    """Most model requests in one turn before it stops."""
    max_tokens: int | None = Field(default=None, ge=1)
    """Cap on tokens per model reply; unset: until the reply ends or the context is full."""
    compact_threshold: float = Field(default=COMPACT_THRESHOLD, gt=0.1, le=1.0)
    """Share of the context in use at which older history is summarised."""
    bash_timeout: float = Field(default=BASH_TIMEOUT_SECONDS, gt=0, le=600)
    """Seconds a bash command may run before it is stopped."""
    env_allow: list[str] = []
    """Environment variables passed to bash commands even though they look like credentials (by
    name or value), which are otherwise left out."""
    sandbox_network: bool = False
    """Let bash commands open network connections (package installs, API calls)."""
    instructions_max_bytes: int = Field(default=32 * 1024, ge=0)
    """Most bytes read from AGENTS.md / CLAUDE.md files into the prompt."""
    speculation: Literal["auto", "server"] = "auto"
    """`auto`: drafting chosen per request where the server honours it (the agent asks it once when
    it starts; localagent's own builds do); `server`: the server's own speculation settings for
    every request, as the profile pins them."""
    permissions: PermissionSettings = PermissionSettings()
    """Allow, ask and deny rules (a table)."""


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX, env_nested_delimiter="__", extra="forbid", nested_model_default_partial_update=True
    )

    server: ServerSettings = ServerSettings()
    agent: AgentSettings = AgentSettings()
    profiles: dict[str, dict[str, Any]] = {}

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # Files arrive merged through init; the environment wins over them.
        return env_settings, init_settings


@dataclass
class LoadedSettings:
    settings: Settings
    notices: list[str] = field(default_factory=list)  # one line each, for the person


def load_settings(
    user_file: Path, workspace: Path | None = None, approvals: ApprovalStore | None = None
) -> LoadedSettings:
    """The user's file, then what of the workspace's file may apply (see workspace_trust)."""
    user_data = _read_toml(user_file)
    layers = [(user_file, user_data)]
    settings: Settings | None = None  # when `merged` was validated already
    notices: list[str] = []
    merged: dict[str, Any] = dict(user_data)
    if workspace is not None:
        path = project_file(workspace)
        try:
            text = _read_text(path)
            data = _parse_toml(path, text) if text is not None else None
        except ConfigError as exc:
            # A stranger's file cannot stop the agent from starting: it is ignored, and said so.
            text, data = None, None
            notices.append(f"ignored {path.name}: {exc}")
        if text is not None and data is not None:
            approved = approvals is not None and approvals.decision(workspace, file_digest(text), "config")
            if approved:
                merged = deep_merge(merged, data)
            else:
                layer = narrow_workspace_layer(user_data, data)
                candidate = deep_merge(merged, layer.applied)
                problem = None
                try:
                    settings = Settings(**candidate)
                except ValidationError as exc:
                    # Valid without it: the workspace file alone is wrong, and is ignored.
                    if _invalid(merged, layers) is None:
                        problem = _describe(exc, [*layers, (path, data)])
                except SettingsError:
                    pass  # the environment's fault: said below, as it would be without the file
                if problem is not None:
                    notices.append(f"ignored {path.name}: {problem}")
                else:
                    merged = candidate
                    notices += layer.notices(path.name)
            layers.append((path, data))
    try:
        return LoadedSettings(settings if settings is not None else Settings(**merged), notices)
    except ValidationError as exc:
        raise ConfigError(_describe(exc, layers)) from None
    except SettingsError as exc:
        # A LOCALAGENT_* value that should be JSON (a list or table) and is not.
        raise ConfigError(f"{_env_culprit()}: {exc}; give a JSON value, e.g. '[\"bash(git *)\"]'") from None


def _invalid(merged: dict[str, Any], layers: list[tuple[Path, dict[str, Any]]]) -> str | None:
    """Why these settings do not validate, in one line; None when they do."""
    try:
        Settings(**merged)
    except ValidationError as exc:
        return _describe(exc, layers)
    except SettingsError:
        return None  # the environment's fault, reported by the caller
    return None


def project_file(workspace: Path) -> Path:
    return workspace / PROJECT_FILE


def _read_text(path: Path) -> str | None:
    """A config file's text, None when there is none. Opened without blocking and refused unless
    it is a regular file (links followed): a FIFO in its place, in a repository or in the
    person's config folder, would otherwise hang every start."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read it: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise ConfigError(f"{path}: not a regular file")
        raw = handle.read()
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not UTF-8 text; fix the file") from None


def _parse_toml(path: Path, text: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}; fix the file") from None
    except RecursionError:
        raise ConfigError(f"{path}: nested too deeply to read; fix the file") from None


def _read_toml(path: Path) -> dict[str, Any]:
    text = _read_text(path)
    return {} if text is None else _parse_toml(path, text)


def _env_culprit() -> str:
    names = sorted(name for name in os.environ if name.startswith(ENV_PREFIX) and "__" in name)
    return "environment variable " + " or ".join(names) if names else "the environment"


def _describe(exc: ValidationError, layers: list[tuple[Path, dict[str, Any]]]) -> str:
    """One line naming where the bad value came from, the key, and what is wrong."""
    error = exc.errors()[0]
    loc = [str(part) for part in error["loc"]]
    key = ".".join(loc)
    message = error["msg"].removeprefix("Value error, ")
    if error["type"] == "extra_forbidden":
        message = "unknown key; check its spelling"
    origin = "configuration"
    env_name = ENV_PREFIX + "__".join(part.upper() for part in loc)
    if env_name in os.environ:
        origin = f"environment variable {env_name}"
    else:
        for path, data in reversed(layers):
            if _has_path(data, loc):
                origin = str(path)
                break
    return f"{origin}: {key}: {message}"


def _has_path(data: dict[str, Any], loc: list[str]) -> bool:
    node: Any = data
    for part in loc:
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return True
