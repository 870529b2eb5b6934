"""Messages posted between the app, its screens and widgets. Dataclasses, so they read as data."""

from __future__ import annotations

from dataclasses import dataclass

from textual.message import Message

from server.supervisor import SupervisorStatus
from server.telemetry import ServerStats


@dataclass
class ServerStatusChanged(Message):
    """The managed llama-server changed state (from the supervisor, in the app's event loop)."""

    status: SupervisorStatus


@dataclass
class TelemetryUpdated(Message):
    """A fresh poll of /metrics, /props and /slots."""

    stats: ServerStats


@dataclass
class PromptSubmitted(Message):
    """The user pressed Enter in the prompt."""

    text: str


@dataclass
class MentionStarted(Message):
    """The user typed ``@`` where a file mention may begin: time to offer the file picker."""
