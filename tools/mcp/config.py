"""MCP server entries from `.mcp.json`-style files (`{"mcpServers": {name: entry}}`).

The format is Claude Code's, so a file a user already has works unchanged: stdio entries
`{command, args, env, cwd}` and remote entries `{type: "http" | "sse", url, headers}`, with
`${VAR}` and `${VAR:-default}` expanded. Keys other clients add are ignored. A broken file or
entry becomes a one-line problem naming the file and the server; the other entries still load.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, ValidationError, field_validator

DEFAULT_STARTUP_TIMEOUT = 10.0
DEFAULT_CALL_TIMEOUT = 60.0

Transport = Literal["stdio", "http", "sse", "sdk"]
# Where an entry came from decides whether it needs approval: only "project" does.
Source = Literal["project", "user", "cli"]

_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
# Spellings other clients use for the streamable HTTP transport.
_HTTP_TYPES = {"http", "streamable-http", "streamable_http", "streamablehttp"}


@dataclass
class ServerConfig:
    name: str
    transport: Transport
    source: Source
    origin: Path
    command: str = ""
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    cwd: Path | None = None
    url: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    startup_timeout: float = DEFAULT_STARTUP_TIMEOUT
    call_timeout: float = DEFAULT_CALL_TIMEOUT
    # The same fields as written in the file, `${VAR}` unexpanded: what is shown to a person, so
    # a secret from the environment is named by its variable and never printed.
    written: dict[str, Any] = field(default_factory=dict)

    def target(self) -> str:
        """What the server runs or where it lives, for listings, as written (``${VAR}`` kept)."""
        if self.transport == "stdio":
            return " ".join([self.written.get("command", self.command), *self.written.get("args", self.args)])
        return str(self.written.get("url", self.url))

    def disclosure(self) -> list[str]:
        """Everything that leaves the machine or runs, for an approval prompt: command and args,
        environment, working directory, URL and headers, each as written."""
        if self.transport == "stdio":
            lines = [f"runs: {self.target()}"]
            if self.written.get("cwd"):
                lines.append(f"in:   {self.written['cwd']}")
            for key, value in (self.written.get("env") or {}).items():
                lines.append(f"env:  {key}={mask_literal_secret(value)}")
            return lines
        lines = [f"connects to: {self.target()} ({self.transport})"]
        for key, value in (self.written.get("headers") or {}).items():
            lines.append(f"header: {key}: {mask_literal_secret(value)}")
        return lines


_LITERAL_SECRET = re.compile(
    r"(sk-|ghp_|gho_|ghu_|ghs_|github_pat_|hf_|AKIA|ASIA|xox[abprs]-|glpat-|npm_|eyJ)[A-Za-z0-9_\-\.]{6,}"
)


def mask_literal_secret(value: str) -> str:
    """A token written into the file itself (not a ``${VAR}``) is shown by its first characters."""
    return _LITERAL_SECRET.sub(lambda m: m.group(0)[:6] + "…(hidden)", str(value))


@dataclass(frozen=True)
class ConfigProblem:
    origin: Path
    message: str
    server: str | None = None

    def __str__(self) -> str:
        where = f"{self.origin}: server {self.server!r}" if self.server else str(self.origin)
        return f"{where}: {self.message}"


@dataclass
class LoadedConfig:
    servers: list[ServerConfig] = field(default_factory=list)
    problems: list[ConfigProblem] = field(default_factory=list)
    # The file's `mcpServers` as written: project approvals are keyed by a hash of it.
    raw_servers: dict[str, Any] = field(default_factory=dict)


class _Entry(BaseModel):
    model_config = ConfigDict(extra="ignore")

    type: str | None = None
    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    startup_timeout: float | None = Field(
        default=None, gt=0, validation_alias=AliasChoices("startup_timeout", "startupTimeout")
    )
    call_timeout: float | None = Field(default=None, gt=0, validation_alias=AliasChoices("call_timeout", "callTimeout"))

    @field_validator("args", mode="before")
    @classmethod
    def _scalar_args(cls, value: Any) -> Any:
        # Hand-written files often have numbers among the args (ports, counts).
        if isinstance(value, list):
            return [_scalar_text(item) for item in value]
        return value

    @field_validator("env", "headers", mode="before")
    @classmethod
    def _scalar_values(cls, value: Any) -> Any:
        if isinstance(value, dict):
            return {key: _scalar_text(item) for key, item in value.items()}
        return value


def _scalar_text(value: Any) -> Any:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return value


class MissingVariable(Exception):
    pass


def expand(text: str, environ: Mapping[str, str]) -> str:
    """`${VAR}` and `${VAR:-default}`; an unset variable without a default is an error."""

    def replace(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        value = environ.get(name)
        if value is None or (value == "" and default is not None):
            if default is None:
                hint = f"write ${{{name}:-default}} for a fallback"
                raise MissingVariable(f"environment variable {name} is not set ({hint})")
            return default
        return value

    return _VARIABLE.sub(replace, text)


def load_config_file(
    path: Path, source: Source, *, environ: Mapping[str, str] | None = None, required: bool = False
) -> LoadedConfig:
    """All entries of one file; a missing file is empty unless `required`."""
    env = os.environ if environ is None else environ
    loaded = LoadedConfig()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        if required:
            loaded.problems.append(ConfigProblem(path, "file not found"))
        return loaded
    except (OSError, UnicodeDecodeError) as exc:
        loaded.problems.append(ConfigProblem(path, f"cannot read it ({_reason(exc)})"))
        return loaded
    try:
        data = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno}, column {exc.colno}"
        loaded.problems.append(ConfigProblem(path, f"not valid JSON: {exc.msg} at {where}"))
        return loaded
    except RecursionError:
        loaded.problems.append(ConfigProblem(path, "nested too deeply to read"))
        return loaded
    if not isinstance(data, dict):
        loaded.problems.append(ConfigProblem(path, "the top level must be a JSON object with an mcpServers object"))
        return loaded
    servers = data.get("mcpServers", {})
    if not isinstance(servers, dict):
        loaded.problems.append(ConfigProblem(path, "mcpServers must be an object of name: server entries"))
        return loaded
    loaded.raw_servers = servers
    for name, raw in servers.items():
        try:
            loaded.servers.append(parse_entry(name, raw, source, path, env))
        except EntryError as exc:
            loaded.problems.append(ConfigProblem(path, str(exc), name))
    return loaded


class EntryError(Exception):
    pass


def parse_entry(name: str, raw: Any, source: Source, origin: Path, environ: Mapping[str, str]) -> ServerConfig:
    if not name.strip():
        raise EntryError("the server name is empty")
    if not isinstance(raw, dict):
        raise EntryError("the entry must be an object with a command or a url")
    try:
        entry = _Entry.model_validate(raw)
    except ValidationError as exc:
        raise EntryError(_validation_message(exc)) from None
    kind = (entry.type or ("http" if entry.url and not entry.command else "stdio")).lower()
    timeouts: dict[str, Any] = {
        "startup_timeout": entry.startup_timeout or DEFAULT_STARTUP_TIMEOUT,
        "call_timeout": entry.call_timeout or DEFAULT_CALL_TIMEOUT,
    }
    try:
        if kind == "stdio":
            if not entry.command or not entry.command.strip():
                raise EntryError("a stdio server needs a command (or give a url and type http or sse)")
            cwd = _resolve_cwd(expand(entry.cwd, environ), origin) if entry.cwd else None
            return ServerConfig(
                name=name, transport="stdio", source=source, origin=origin,
                command=expand(entry.command, environ),
                args=[expand(arg, environ) for arg in entry.args],
                env={key: expand(value, environ) for key, value in entry.env.items()},
                cwd=cwd, written=_written(entry), **timeouts,
            )  # fmt: skip
        if kind in _HTTP_TYPES or kind == "sse":
            if not entry.url:
                raise EntryError(f"a {kind} server needs a url")
            url = expand(entry.url, environ)
            if not url.startswith(("http://", "https://")):
                raise EntryError(f"url {url!r} must start with http:// or https://")
            return ServerConfig(
                name=name, transport="sse" if kind == "sse" else "http", source=source, origin=origin,
                url=url, headers={key: expand(value, environ) for key, value in entry.headers.items()},
                written=_written(entry), **timeouts,
            )  # fmt: skip
        if kind == "sdk":
            # Served by the program that started localagent (the Claude Agent SDK), through its relay.
            return ServerConfig(
                name=name, transport="sdk", source=source, origin=origin, written={"type": "sdk"}, **timeouts
            )
    except MissingVariable as exc:
        raise EntryError(str(exc)) from None
    raise EntryError(f"unknown type {entry.type!r}; use stdio, http or sse")


def _written(entry: _Entry) -> dict[str, Any]:
    return {
        "command": entry.command or "",
        "args": list(entry.args),
        "env": dict(entry.env),
        "cwd": entry.cwd,
        "url": entry.url or "",
        "headers": dict(entry.headers),
    }


def merge(loads: Sequence[LoadedConfig]) -> list[ServerConfig]:
    """Later files win for a name they share (user, then project, then --mcp-config)."""
    by_name: dict[str, ServerConfig] = {}
    for loaded in loads:
        for server in loaded.servers:
            by_name.pop(server.name, None)
            by_name[server.name] = server
    return list(by_name.values())


def _resolve_cwd(text: str, origin: Path) -> Path:
    path = Path(text).expanduser()
    # A relative cwd means relative to the file, as it would for anyone reading it.
    return path if path.is_absolute() else (origin.parent / path).resolve()


def _validation_message(exc: ValidationError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(part) for part in error["loc"])
    message = error["msg"]
    return f"{where}: {message}" if where else message


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__
