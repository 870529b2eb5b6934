"""A saved session's model requests, rebuilt for ``localagent bench --replay``.

The session file has the history as it grew (MessageAppended, HistoryReplaced), what every
request sent besides it (RequestSetup) and one RequestRecorded per completed request, saying
how many messages of the history it carried. Walking the events in order rebuilds each request
exactly: the setup's system prompt, the first messages of the history at that point, the
setup's tools and sampling. Compaction's own summary requests are not recorded, so they are not
replayed.

A session file can come from anywhere (a shipped sample, a colleague), so every record is
checked on the way in and a bad one is named, never a traceback.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agent.events import HistoryReplaced, MessageAppended, RequestRecorded, RequestSetup, ToolCallFinished, TurnStarted
from agent.sessions import LoadedSession, SessionError, parse_session, repair_interrupted_calls
from server.bench.replay_plan import RecordedNumbers, ReplayRequest, ReplaySession
from tools.regular_files import NotRegularFile, read_regular_file

__all__ = ["MAX_SESSION_FILE_BYTES", "NO_REQUESTS_HINT", "read_session_file", "replay_session"]

# A session named on the command line is read whole; none that localagent writes comes near this.
MAX_SESSION_FILE_BYTES = 256 * 2**20

NO_REQUESTS_HINT = (
    "sessions saved by older versions of localagent do not record their requests; "
    "run a new session with `localagent run` or the TUI and replay that"
)


# A replay sends every request again; a file with more than this is not an agent's session.
MAX_REPLAY_REQUESTS = 20_000


class _Message(BaseModel):
    model_config = ConfigDict(extra="allow")
    role: str


class _Setup(BaseModel):
    system: str
    tools: list[dict[str, Any]] = []
    sampling: dict[str, Any] = {}
    model: str | None = None


class _Recorded(BaseModel):
    messages: int = Field(ge=1)
    finish_reason: str | None = None
    timings: dict[str, Any] = {}
    usage: dict[str, Any] = {}
    duration_s: float | None = Field(default=None, ge=0, allow_inf_nan=False)


def read_session_file(path: Path, max_bytes: int = MAX_SESSION_FILE_BYTES) -> LoadedSession:
    """A session file named by a person (it may be anywhere, or not a file at all)."""
    try:
        read = read_regular_file(path.resolve(strict=True), max_bytes)
    except NotRegularFile:
        raise SessionError(f"{path} is not a regular file; give a session file (.jsonl)") from None
    except (OSError, RuntimeError) as exc:
        raise SessionError(f"cannot read session file {path}: {getattr(exc, 'strerror', None) or exc}") from None
    if read.unread:
        raise SessionError(f"{path} is over {max_bytes // 2**20} MiB; that is not a session file localagent wrote")
    return parse_session(read.data, path)


def replay_session(loaded: LoadedSession, name: str, source: str) -> ReplaySession:
    """The requests of ``loaded``, in order; SessionError when it has none or a record is bad."""
    walk = _Walk()
    for number, event in enumerate(loaded.events, start=2):
        try:
            walk.take(event)
        except ValidationError as exc:
            problem = exc.errors()[0]
            where = ".".join(str(part) for part in problem["loc"]) or "the record"
            raise SessionError(
                f"{source}: line {number} ({event.get('type')}) is malformed ({where}: {problem['msg']})"
            ) from None
        except _Bad as exc:
            raise SessionError(f"{source}: line {number}: {exc}") from None
    if not walk.requests:
        raise SessionError(f"{source} has no recorded model requests to replay; {NO_REQUESTS_HINT}")
    return ReplaySession(
        name=name,
        source=source,
        session_id=str(loaded.header.get("session_id", "")),
        model=walk.model,
        requests=walk.requests,
        turns=walk.turn,
        notes=list(loaded.notes),
    )


class _Bad(Exception):
    pass


class _Walk:
    def __init__(self) -> None:
        self.history: list[dict[str, Any]] = []
        self.setup: _Setup | None = None
        self.model: str | None = None
        self.turn = 0
        self.requests: list[ReplayRequest] = []
        self.tool_seconds: dict[int, float] = {}

    def take(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == MessageAppended.type:
            # Appending never changes what an earlier request sent: it keeps only its first messages.
            self.history.append(_message(event.get("message")))
        elif kind == HistoryReplaced.type:
            messages = event.get("messages")
            if not isinstance(messages, list):
                raise _Bad("a history_replaced record without a list of messages")
            # A new list: the requests before keep the history they extended. The stored history
            # starts with the system prompt; RequestSetup carries that.
            self.history = [m for m in map(_message, messages) if m.get("role") != "system"]
        elif kind == TurnStarted.type:
            self.turn += 1
        elif kind == RequestSetup.type:
            self.setup = _Setup.model_validate(event)
            # A new process (a resumed session): its agent repaired calls an earlier run left
            # unanswered, and sent those results without recording them as messages.
            self.history = repair_interrupted_calls(self.history)
            self.model = self.setup.model or self.model
        elif kind == RequestRecorded.type:
            self._request(_Recorded.model_validate(event))
        elif kind == ToolCallFinished.type and self.requests:
            # The call belongs to the last answer: its time follows that request in the session.
            duration = event.get("duration_s")
            if isinstance(duration, int | float) and 0 <= duration < 86_400:
                last = self.requests[-1]
                self.requests[-1] = _with_tool_time(last, last.tool_seconds + float(duration))

    def _request(self, record: _Recorded) -> None:
        if self.setup is None:
            raise _Bad("a request_recorded record before any request_setup record")
        sent = record.messages - 1  # the system prompt is the first message sent
        if sent > len(self.history):
            raise _Bad(f"the request sent {record.messages} messages but the history has only {len(self.history) + 1}")
        if len(self.requests) >= MAX_REPLAY_REQUESTS:
            raise _Bad(f"more than {MAX_REPLAY_REQUESTS} model requests; no session of an agent has that many")
        self.requests.append(
            ReplayRequest(
                index=len(self.requests) + 1,
                turn=self.turn,
                system=self.setup.system,
                history=self.history,
                sent=sent,
                tools=self.setup.tools,
                sampling=self.setup.sampling,
                recorded=_numbers(record),
            )
        )


def _message(raw: Any) -> dict[str, Any]:
    return _Message.model_validate(raw).model_dump()


def _with_tool_time(request: ReplayRequest, seconds: float) -> ReplayRequest:
    return replace(request, tool_seconds=seconds)


def _numbers(record: _Recorded) -> RecordedNumbers:
    timings, usage = record.timings, record.usage

    def count(value: Any) -> int | None:
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
            return None
        return int(value)

    prompt = count(usage.get("prompt_tokens"))
    if "prompt_n" in timings or "cache_n" in timings:
        prompt = (count(timings.get("prompt_n")) or 0) + (count(timings.get("cache_n")) or 0)
    return RecordedNumbers(
        prompt_tokens=prompt,
        cached_tokens=count(timings.get("cache_n")),
        completion_tokens=count(timings.get("predicted_n")) or count(usage.get("completion_tokens")),
        drafted=count(timings.get("draft_n")),
        accepted=count(timings.get("draft_n_accepted")),
        duration_s=record.duration_s,
        finish_reason=record.finish_reason,
    )
