"""What the meter keeps of each request: as it arrived (``Arrival``), then as it was answered
(``MeteredRequest``)."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from localagent.launch.usage_reading import AnswerFacts
from localagent.launch.wire_protocols import WireProtocol


@dataclass(frozen=True)
class MeteredRequest:
    """One request the agent made, as the meter saw it."""

    method: str
    path: str
    protocol: WireProtocol | None  # None: not a generation request
    status: int  # what the agent was answered
    stream: bool
    has_tools: bool
    prompt_tokens: int | None
    timings: dict[str, Any] | None
    started_at: float  # time.time() when the request arrived
    seconds: float  # until the answer's last byte
    error: str | None = None  # one line: what went wrong, when something did


@dataclass
class Arrival:
    """A request as it came in, before its answer."""

    method: str
    path: str
    body: bytes
    protocol: WireProtocol | None
    started_at: float
    started: float  # time.monotonic()
    recorded: bool = False

    def json_body(self) -> dict[str, Any] | None:
        try:
            parsed = json.loads(self.body)
        except (ValueError, RecursionError):
            return None
        return parsed if isinstance(parsed, dict) else None

    def record(self, status: int, facts: AnswerFacts | None = None, error: str | None = None) -> MeteredRequest:
        request = self.json_body() or {}
        return MeteredRequest(
            method=self.method,
            path=self.path,
            protocol=self.protocol,
            status=status,
            stream=request.get("stream") is True,
            has_tools=bool(request.get("tools")),
            prompt_tokens=facts.prompt_tokens if facts else None,
            timings=facts.timings if facts else None,
            started_at=self.started_at,
            seconds=time.monotonic() - self.started,
            error=error,
        )
