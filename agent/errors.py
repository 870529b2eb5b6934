"""Errors of the agent layer, with messages for people."""

from __future__ import annotations


class AgentError(Exception):
    """Something the user should see as one line (a missing session, a failed checkpoint)."""
