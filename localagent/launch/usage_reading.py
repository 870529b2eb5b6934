"""What a server's answer says about the request: its prompt tokens and llama-server's timings,
read the same way for the three protocols, streamed (server-sent events) or whole.

Where the numbers sit: Anthropic puts ``usage`` in ``message_start`` (streamed) or the message,
and counts cached tokens apart from ``input_tokens``; Responses puts it in ``response.completed``
with the cached tokens included; Chat Completions in its last chunk (when asked for) or the body.
llama-server adds ``timings`` (prompt_n, cache_n, predicted_per_second, ...) to its last event."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

# Anthropic's usage leaves out the tokens read from (or written to) its cache.
_ANTHROPIC_CACHE_FIELDS = ("cache_read_input_tokens", "cache_creation_input_tokens")


@dataclass
class AnswerFacts:
    """Prompt tokens and timings gathered from one answer's events (the last one that says wins)."""

    usage_prompt_tokens: int | None = None
    timings: dict[str, Any] | None = None

    def read_event(self, event: Any) -> None:
        if not isinstance(event, dict):
            return
        tokens = _prompt_tokens(event)
        if tokens is not None:
            self.usage_prompt_tokens = tokens
        if isinstance(event.get("timings"), dict):
            self.timings = event["timings"]

    @property
    def prompt_tokens(self) -> int | None:
        """From the usage; else from the timings (tokens evaluated plus those reused from the cache)."""
        if self.usage_prompt_tokens is not None:
            return self.usage_prompt_tokens
        timings = self.timings or {}
        evaluated, cached = timings.get("prompt_n"), timings.get("cache_n", 0)
        if isinstance(evaluated, int) and isinstance(cached, int):
            return evaluated + cached
        return None


class EventStreamReader:
    """Reads server-sent events as their bytes pass: every ``data:`` line's JSON goes to ``facts``.
    Lines may be split anywhere between chunks, so the unfinished one waits for the next."""

    def __init__(self, facts: AnswerFacts) -> None:
        self.facts = facts
        self._pending = b""

    def feed(self, chunk: bytes) -> None:
        *lines, self._pending = (self._pending + chunk).split(b"\n")
        for line in lines:
            self._read_line(line)

    def close(self) -> None:
        self._read_line(self._pending)
        self._pending = b""

    def _read_line(self, line: bytes) -> None:
        line = line.strip()
        if not line.startswith(b"data:"):
            return
        payload = line[len(b"data:") :].strip()
        if not payload or payload == b"[DONE]":
            return
        try:
            self.facts.read_event(json.loads(payload))
        except (ValueError, RecursionError):
            return  # not JSON: nothing to learn from it, and the agent still gets the bytes


def read_whole_answer(body: bytes) -> AnswerFacts:
    """The facts of an answer that came in one JSON body."""
    facts = AnswerFacts()
    try:
        facts.read_event(json.loads(body))
    except (ValueError, RecursionError):
        pass
    return facts


def _prompt_tokens(event: dict[str, Any]) -> int | None:
    # message_start holds the message, response.completed the response; a body holds its usage.
    for holder in (event.get("message"), event.get("response"), event):
        if isinstance(holder, dict) and isinstance(holder.get("usage"), dict):
            tokens = _usage_prompt_tokens(holder["usage"])
            if tokens is not None:
                return tokens
    return None


def _usage_prompt_tokens(usage: dict[str, Any]) -> int | None:
    if isinstance(usage.get("prompt_tokens"), int):
        return int(usage["prompt_tokens"])
    if isinstance(usage.get("input_tokens"), int):
        cached = sum(int(usage[name]) for name in _ANTHROPIC_CACHE_FIELDS if isinstance(usage.get(name), int))
        return int(usage["input_tokens"]) + cached
    return None
