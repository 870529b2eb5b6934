"""Sessions on disk: the append-only event file of each conversation (``store``) and the history
a resumed conversation starts from (``resume``)."""

from agent.sessions.resume import messages_from_events, repair_interrupted_calls
from agent.sessions.store import (
    LIST_HINT,
    LoadedSession,
    SessionError,
    SessionNotFoundError,
    SessionStore,
    SessionWriter,
    new_session_id,
    parse_session,
)

__all__ = [
    "LIST_HINT",
    "LoadedSession",
    "SessionError",
    "SessionNotFoundError",
    "SessionStore",
    "SessionWriter",
    "messages_from_events",
    "new_session_id",
    "parse_session",
    "repair_interrupted_calls",
]
