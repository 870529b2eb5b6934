"""A recorded agent session as a bench workload: its model requests, in order, on one server.

Each request is sent as the session sent it (the same messages, tool schemas and sampling
fields) so that the server's prompt cache behaves as it did: every request extends the one
before it, and only the new part of the prompt is processed. The answers generated now are
measured and dropped; the next request carries the recorded history, not them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from server.bench.client import Endpoint
from server.bench.results import RequestResult
from server.bench.workload import Row

# An answer the session did not measure (a server without timings) gets at most this many tokens.
DEFAULT_REPLAY_MAX_TOKENS = 512
# And no recorded answer more than this without --max-tokens: a session file is not trusted to
# set a server generating for an hour.
RECORDED_MAX_TOKENS_CEILING = 8192
# The sampling fields a replay passes on. Anything else in a session file (a grammar, n_probs,
# a slot id) is not sampling the agent sends, and is dropped.
SAMPLING_FIELDS = frozenset(
    {
        "temperature",
        "top_k",
        "top_p",
        "min_p",
        "typical_p",
        "repeat_penalty",
        "repeat_last_n",
        "presence_penalty",
        "frequency_penalty",
        "dry_multiplier",
        "dry_base",
        "dry_allowed_length",
        "stop",
    }
)


@dataclass(frozen=True)
class RecordedNumbers:
    """What the session's own server said about a request, when it said it."""

    prompt_tokens: int | None = None
    cached_tokens: int | None = None
    completion_tokens: int | None = None
    drafted: int | None = None
    accepted: int | None = None
    duration_s: float | None = None
    finish_reason: str | None = None


@dataclass(frozen=True)
class ReplayRequest:
    index: int  # from 1, in the session's order
    turn: int
    system: str
    # The history as the session grew it, shared by the requests that extend it: a request sent
    # its first ``sent`` messages. Shared, because copying it per request costs the square of a
    # long session's length.
    history: Sequence[dict[str, Any]]
    sent: int
    tools: list[dict[str, Any]]
    sampling: dict[str, Any]
    recorded: RecordedNumbers = RecordedNumbers()
    # Time the tools the model called in this answer took in the session (the same on every profile).
    tool_seconds: float = 0.0

    @property
    def name(self) -> str:
        return f"request {self.index:03d}"

    @property
    def messages(self) -> list[dict[str, Any]]:
        """What the request sent: the system prompt, then the history as it stood."""
        return [{"role": "system", "content": self.system}, *self.history[: self.sent]]


@dataclass(frozen=True)
class ReplaySession:
    name: str  # what the report calls it: the file name or the session id
    source: str  # the path it was read from
    session_id: str
    model: str | None  # the model the session ran against, as its requests named it
    requests: list[ReplayRequest]
    turns: int
    notes: list[str] = field(default_factory=list)

    @property
    def tool_seconds(self) -> float:
        return sum(request.tool_seconds for request in self.requests)

    @property
    def recorded_model_seconds(self) -> float | None:
        """The model time the session itself spent, when every request recorded it."""
        durations = [request.recorded.duration_s for request in self.requests]
        return None if any(d is None for d in durations) else sum(d for d in durations if d is not None)


@dataclass(frozen=True)
class ReplaySettings:
    temperature: float | None = 0.0  # None: the session's own sampling
    max_tokens: int | None = None  # a cap on every answer, over the recorded length
    seed: int = 42


@dataclass(frozen=True)
class ReplayWorkload:
    session: ReplaySession
    settings: ReplaySettings = ReplaySettings()

    @cached_property
    def _by_name(self) -> dict[str, ReplayRequest]:
        # A long session has thousands of requests: looking each up by a scan would be quadratic.
        return {request.name: request for request in self.session.requests}

    def rows(self) -> list[Row]:
        return [Row(request.name) for request in self.session.requests]

    def body(self, endpoint: Endpoint, row: Row, stop: Sequence[str] | None) -> dict[str, Any]:
        request = self._by_name[row.name]
        body: dict[str, Any] = {key: value for key, value in request.sampling.items() if key in SAMPLING_FIELDS}
        body.update(
            messages=request.messages,
            max_tokens=self.max_tokens(request),
            seed=self.settings.seed,
            stream=True,
            stream_options={"include_usage": True},
            timings_per_token=True,
            cache_prompt=True,
        )
        if request.tools:
            body["tools"] = request.tools
        if self.settings.temperature is not None:
            body["temperature"] = self.settings.temperature
        # The stop strings belong to the model being served (the agent sends its profile's); a
        # server given by URL keeps the session's.
        if stop:
            body["stop"] = list(stop)
        elif stop is not None:
            body.pop("stop", None)
        if endpoint.model:
            body["model"] = endpoint.model
        return body

    def max_tokens(self, request: ReplayRequest) -> int:
        """The recorded answer's length, so that each profile generates what the session did."""
        recorded = request.recorded.completion_tokens
        length = (
            min(max(recorded, 1), RECORDED_MAX_TOKENS_CEILING) if recorded is not None else DEFAULT_REPLAY_MAX_TOKENS
        )
        return min(length, self.settings.max_tokens) if self.settings.max_tokens else length

    def seed(self, row: Row) -> int:
        return self.settings.seed

    def order(self, rows: list[RequestResult]) -> None:
        """Already in the session's order."""

    def measured(self, row: Row, result: RequestResult) -> None:
        """The session's requests are sent as recorded, whatever the answers now."""
