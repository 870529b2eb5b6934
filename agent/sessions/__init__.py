"""Sessions on disk: the append-only event file of each conversation (``store``) and the history
a resumed conversation starts from (``resume``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tools.lazy_exports import lazy_exports

if TYPE_CHECKING:
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

# Loaded on first use: importing the face costs nothing until a name is read.
_EXPORTS = {
    "messages_from_events": "agent.sessions.resume",
    "repair_interrupted_calls": "agent.sessions.resume",
    "LIST_HINT": "agent.sessions.store",
    "LoadedSession": "agent.sessions.store",
    "SessionError": "agent.sessions.store",
    "SessionNotFoundError": "agent.sessions.store",
    "SessionStore": "agent.sessions.store",
    "SessionWriter": "agent.sessions.store",
    "new_session_id": "agent.sessions.store",
    "parse_session": "agent.sessions.store",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

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
