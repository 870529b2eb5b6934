"""What every engine is to localagent: a name, its Prometheus counters, how it says who it is,
and (for engines localagent does not build) how it is launched.

An engine is one module in this package holding one ``Engine`` (or ``LaunchedEngine``) value;
``server.engines`` lists them. llama-server is built and launched by localagent itself
(``server.build``, ``server.argv``); vLLM and SGLang are Python programs the user installs, whose
own launch command a profile is turned into.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from server.profiles import Profile

# GET a path of the server ("/props"); its JSON object, or None when it has none.
Fetch = Callable[[str], Awaitable[dict[str, Any] | None]]


@dataclass(frozen=True)
class Identified:
    version: str | None = None


@dataclass(frozen=True)
class Command:
    """An engine's launch command for one profile, before the parts every engine shares."""

    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Engine(ABC):
    key: str  # the profile's `engine` value and the telemetry's engine name
    display_name: str
    metrics_prefix: str  # every sample on its /metrics page starts with this
    # sample name (without the prefix) -> server.telemetry.MetricsSnapshot field
    metric_fields: Mapping[str, str] = field(default_factory=dict)
    # Drafts counted per request (llama-server's `timings`); the others count them only in total.
    drafts_per_request: bool = False
    # What it writes as `owned_by` at /v1/models, where that names the engine.
    owned_by: str | None = None

    @abstractmethod
    async def identify(self, fetch: Fetch) -> Identified | None:
        """What the server at ``fetch`` says of itself when it is this engine; None when it is not."""

    def fold_sample(
        self, name: str, labels: Mapping[str, str], value: float, add: Callable[[str, float], None]
    ) -> bool:
        """Samples an engine counts in a shape of its own; True when ``name`` was taken here."""
        return False


@dataclass(frozen=True)
class LaunchedEngine(Engine):
    """An engine the user installs, started by its own command line."""

    shown_launcher: tuple[str, ...] = ()  # how the printed command starts
    install: str = ""  # what to run when it is not installed

    @abstractmethod
    def installed_launcher(self) -> tuple[str, ...] | None:
        """The start of the engine's command on this machine, or None when it is not installed."""

    @abstractmethod
    def command(self, profile: Profile, start: list[str], host: str, port: int, api_key: str | None) -> Command:
        """The engine's command for ``profile`` (``start`` is the launcher), its environment and notes."""


def text_version(value: Any) -> str | None:
    text = str(value).strip() if value is not None else ""
    return text[:80] or None
