"""Sessions saved as JSONL: a header line, then one JSON object per event, appended as it happens.

The store is generic: events are plain dicts with a `type`. It knows two of the agent's event
types, to count a session's turns and to fsync at turn boundaries; which events the loop
persists is written down in agent.events, and rebuilding a conversation from them is
agent.sessions.resume.
"""

from __future__ import annotations

import builtins  # the store has a method named `list`
import json
import math
import os
import re
import secrets
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from agent.errors import AgentError
from agent.events import TurnFinished, TurnStarted
from agent.text_lines import one_line

__all__ = [
    "LIST_HINT",
    "SYNC_EVENT_TYPES",
    "USER_EVENT_TYPES",
    "LoadedSession",
    "SessionError",
    "SessionHeader",
    "SessionNotFoundError",
    "SessionStore",
    "SessionSummary",
    "SessionWriter",
    "new_session_id",
    "parse_session",
]

FORMAT_VERSION = 1
SUFFIX = ".jsonl"
# Shown with every "no such session" error; the CLI owns the exact command.
LIST_HINT = "list saved sessions with `localagent sessions`"
# Event types that count as a person's message for summaries, and the fields holding its text.
USER_EVENT_TYPES = frozenset({TurnStarted.type})
# Turn boundaries: these events are fsync'd, everything else only flushed to the OS.
SYNC_EVENT_TYPES = frozenset({TurnStarted.type, TurnFinished.type})
_TEXT_FIELDS = ("text", "content")
_VALID_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


class SessionError(AgentError):
    """A session file could not be written or read."""


class SessionNotFoundError(SessionError):
    """No session matches the id (or there is no "last" one)."""

    exit_code = 2  # bad input on the command line


class SessionHeader(BaseModel):
    """The first line of every session file, validated on the way in and out."""

    model_config = ConfigDict(frozen=True, extra="allow")

    type: Literal["session"] = "session"
    format: int = FORMAT_VERSION
    session_id: str
    workspace: str
    created: datetime
    localagent_version: str
    # Model, profile and whatever else the caller wants to remember about how it ran.
    meta: dict[str, Any] = {}


@dataclass(frozen=True)
class SessionSummary:
    session_id: str
    workspace: str
    created: datetime
    updated: datetime
    first_user_message: str | None
    turns: int
    path: Path


@dataclass
class LoadedSession:
    # The header record as a plain dict (session_id, workspace, created, localagent_version, meta).
    header: dict[str, Any]
    events: list[dict[str, Any]]
    # Things a person may want to know, e.g. that a half-written last line was dropped.
    notes: list[str] = field(default_factory=list)

    def __iter__(self) -> Iterator[Any]:
        # Lets callers write `header, events = store.open(...)`.
        return iter((self.header, self.events))


def new_session_id(now: datetime | None = None) -> str:
    """`YYYYmmdd-HHMMSS-xxxxxx`: sorts by creation time, readable, unique enough."""
    moment = (now or datetime.now()).strftime("%Y%m%d-%H%M%S")
    return f"{moment}-{secrets.token_hex(3)}"


def _now_text() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def _version() -> str:
    try:
        return metadata.version("localagent-dflash")
    except metadata.PackageNotFoundError:
        return "unknown"


class SessionWriter:
    """Appends events to one session file; each event is written with a single write and flushed."""

    def __init__(self, path: Path, header: Mapping[str, Any], sync_types: frozenset[str] = SYNC_EVENT_TYPES) -> None:
        self.path = path
        self.header = dict(header)
        self.sync_types = sync_types
        self._lock = threading.Lock()
        self._fd: int | None = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)

    @property
    def session_id(self) -> str:
        return str(self.header["session_id"])

    @property
    def closed(self) -> bool:
        return self._fd is None

    def append(self, event: Mapping[str, Any], *, sync: bool = False) -> dict[str, Any]:
        """Record one event (a `ts` is added if missing); fsync'd if `sync` or a turn boundary."""
        record = dict(event)
        if not isinstance(record.get("type"), str) or not record["type"]:
            raise SessionError(f"session events need a string 'type'; got keys {sorted(record)}")
        record.setdefault("ts", _now_text())
        self._write_line(record)
        if sync or record["type"] in self.sync_types:
            self.sync()
        return record

    def sync(self) -> None:
        """Make everything written so far survive a crash of the machine, not only of the process."""
        with self._lock:
            os.fsync(self._require_fd())

    def close(self) -> None:
        with self._lock:
            if self._fd is not None:
                os.fsync(self._fd)
                os.close(self._fd)
                self._fd = None

    def __enter__(self) -> SessionWriter:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def _write_line(self, record: Mapping[str, Any]) -> None:
        try:
            text = json.dumps(_finite(record), ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise SessionError(f"event {record.get('type')!r} cannot be saved as JSON: {exc}") from exc
        # An unpaired surrogate (the model can send one) has no UTF-8 form; written as its JSON
        # escape it keeps the line valid JSON and reads back as the same string.
        data = (text + "\n").encode("utf-8", "backslashreplace")
        with self._lock:
            fd = self._require_fd()
            # One write per line: a killed process leaves at most one partial line at the end.
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]

    def _require_fd(self) -> int:
        if self._fd is None:
            raise SessionError(f"session {self.session_id} is closed; resume it to write more")
        return self._fd


def _finite(value: Any) -> Any:
    """NaN and infinities (which JSON has no words for) become their names as strings."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(item) for item in value]
    return value


class SessionStore:
    def __init__(self, directory: Path, *, user_event_types: frozenset[str] = USER_EVENT_TYPES) -> None:
        self.directory = Path(directory)
        self.user_event_types = user_event_types

    def create(
        self, workspace: Path, meta: Mapping[str, Any] | None = None, *, session_id: str | None = None
    ) -> SessionWriter:
        """Start a new session file; its header records the workspace, `meta` (model, profile) and
        version. ``session_id`` is one a front end already gave out (from ``new_session_id``)."""
        if session_id is not None and not _VALID_ID.fullmatch(session_id):
            raise SessionError(f"{session_id!r} is not a session id")
        header = SessionHeader(
            session_id=session_id or new_session_id(),
            workspace=str(Path(workspace).resolve()),
            created=datetime.now(UTC),
            localagent_version=_version(),
            meta=dict(meta or {}),
        )
        path = self._path(header.session_id)
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            # O_EXCL: two agents starting in the same second must not share a file.
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        except FileExistsError:
            if session_id is not None:
                raise SessionError(f"session {session_id} exists already") from None
            return self.create(workspace, meta)
        except OSError as exc:
            raise SessionError(f"cannot create a session file in {self.directory}: {exc.strerror or exc}") from exc
        record = header.model_dump(mode="json")
        writer = SessionWriter(path, record)
        writer._write_line(record)
        writer.sync()
        return writer

    def open(self, session: str, workspace: Path | None = None) -> LoadedSession:
        """Load a session by id, unique id prefix, or "last" (newest for `workspace`, if given)."""
        return self._load(self._find(session, workspace))

    def resume(self, session: str, workspace: Path | None = None) -> SessionWriter:
        """Reopen a session for appending; a half-written last line is cut off first."""
        path = self._find(session, workspace)
        loaded = self._load(path)
        _drop_partial_tail(path)
        return SessionWriter(path, loaded.header)

    def list(self, workspace: Path | None = None) -> list[SessionSummary]:
        """Summaries, most recently updated first."""
        summaries: list[SessionSummary] = []
        for path in self._candidates(workspace):
            try:
                loaded = self._load(path)
            except SessionError:
                continue
            summaries.append(self._summarise(path, loaded))
        return sorted(summaries, key=lambda s: (s.updated, s.session_id), reverse=True)

    # -- lookup -----------------------------------------------------------------------------

    def _path(self, session_id: str) -> Path:
        return self.directory / f"{session_id}{SUFFIX}"

    def _find(self, session: str, workspace: Path | None) -> Path:
        if session == "last":
            newest = self._newest(workspace)
            if newest is None:
                where = f" for {Path(workspace).resolve()}" if workspace is not None else ""
                raise SessionNotFoundError(f"no saved session{where} in {self.directory}; {LIST_HINT}")
            return newest
        if not _VALID_ID.fullmatch(session):
            raise SessionNotFoundError(f"{session!r} is not a session id; {LIST_HINT}")
        exact = self._path(session)
        if exact.is_file():
            return exact
        matches = sorted(self.directory.glob(f"{session}*{SUFFIX}")) if self.directory.is_dir() else []
        if len(matches) == 1:
            return matches[0]
        if len(matches) > 1:
            shown = ", ".join(p.name.removesuffix(SUFFIX) for p in matches[:5])
            raise SessionNotFoundError(f"session id {session} is ambiguous ({shown}); give more of it")
        raise SessionNotFoundError(f"no session {session} in {self.directory}; {LIST_HINT}")

    def _candidates(self, workspace: Path | None) -> builtins.list[Path]:
        if not self.directory.is_dir():
            return []
        wanted = str(Path(workspace).resolve()) if workspace is not None else None
        found: list[Path] = []
        for path in self.directory.iterdir():
            if path.suffix != SUFFIX or not path.is_file():
                continue
            # Files without a readable header (a crash right at creation) are not sessions.
            header = _read_header(path)
            if header is not None and (wanted is None or header.workspace == wanted):
                found.append(path)
        return found

    def _newest(self, workspace: Path | None) -> Path | None:
        candidates = self._candidates(workspace)
        if not candidates:
            return None
        return max(candidates, key=lambda p: (p.stat().st_mtime_ns, p.name))

    # -- reading ----------------------------------------------------------------------------

    def _load(self, path: Path) -> LoadedSession:
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise SessionError(f"cannot read session file {path}: {exc.strerror or exc}") from exc
        return parse_session(data, path)

    def _summarise(self, path: Path, loaded: LoadedSession) -> SessionSummary:
        user_texts = [_event_text(e) for e in loaded.events if e.get("type") in self.user_event_types]
        first = next((t for t in user_texts if t), None)
        updated = datetime.fromtimestamp(path.stat().st_mtime, UTC)
        header = SessionHeader.model_validate(loaded.header)
        return SessionSummary(
            session_id=header.session_id,
            workspace=header.workspace,
            created=header.created,
            updated=updated,
            first_user_message=one_line(first, 80) if first else None,
            turns=len(user_texts),
            path=path,
        )


def _parse_event(raw: bytes) -> dict[str, Any] | None:
    try:
        record = json.loads(raw)
    except (ValueError, UnicodeDecodeError, RecursionError):  # RecursionError: nesting deeper than any event
        return None
    return record if isinstance(record, dict) else None


def _parse_header(raw: bytes, path: Path) -> SessionHeader:
    record = _parse_event(raw)
    if record is None or record.get("type") != "session":
        raise SessionError(f"{path} is not a localagent session file (no header line)")
    try:
        return SessionHeader.model_validate(record)
    except ValidationError as exc:
        problem = exc.errors()[0]
        where = ".".join(str(part) for part in problem["loc"])
        raise SessionError(f"{path} has a bad session header ({where}: {problem['msg']})") from None


def _read_header(path: Path) -> SessionHeader | None:
    try:
        with path.open("rb") as handle:
            first = handle.readline()
        return _parse_header(first, path)
    except (OSError, SessionError):
        return None


def _drop_partial_tail(path: Path) -> None:
    """Cut a line left unfinished by a killed process, so the next event starts on a fresh line."""
    with path.open("rb+") as handle:
        size = handle.seek(0, os.SEEK_END)
        if size == 0:
            return
        handle.seek(size - 1)
        if handle.read(1) == b"\n":
            return
        # Walk back to the last newline; a session file's lines are short enough to read in one go.
        handle.seek(0)
        data = handle.read()
        handle.truncate(data.rfind(b"\n") + 1)


def _event_text(event: Mapping[str, Any]) -> str | None:
    for name in _TEXT_FIELDS:
        value = event.get(name)
        if isinstance(value, str) and value.strip():
            return value
    return None


def parse_session(data: bytes, path: Path) -> LoadedSession:
    """A session file's bytes: the header, then every event that parses (the rest noted)."""
    lines = data.split(b"\n")
    # A file written by us ends with "\n", so the final element is empty unless a write was cut.
    tail = lines.pop()
    notes: list[str] = []
    header = _parse_header(lines[0] if lines else tail, path).model_dump(mode="json")
    if not lines:
        return LoadedSession(header, [], notes)
    events: list[dict[str, Any]] = []
    for number, raw in enumerate(lines[1:], start=2):
        record = _parse_event(raw)
        if record is None:
            if raw.strip():
                notes.append(f"{path.name}: line {number} is not a JSON event; skipped")
            continue
        events.append(record)
    if tail.strip():
        record = _parse_event(tail)
        if record is None:
            notes.append(f"{path.name}: the last line was cut off mid-write (process killed?); ignored")
        else:
            events.append(record)
    return LoadedSession(header, events, notes)
