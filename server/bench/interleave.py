"""Sessions that share one server, replayed turn by turn: what each request reads again.

Two agents on one llama-server (two terminals, an editor's sessions over ACP) take turns. Each
request of a session extends that session's previous one, so in the best case the server reads
only the new tokens; when the other session's turn evicted this one's cache (one slot, a host
prompt cache too small), it reads the whole prompt again. ``interleave`` sends the recorded
requests of several sessions round-robin (request 1 of each, then request 2 of each...) to one
server and records, per request, the prompt's size, what was read and what was reused.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import httpx2

from server.bench.replay_plan import SAMPLING_FIELDS, ReplaySession
from server.http import auth_headers


@dataclass(frozen=True)
class InterleavedRequest:
    session: str
    index: int  # the request's number in its session, from 1
    prompt_tokens: int  # the whole prompt: read plus reused
    read: int  # prompt tokens the server processed
    reused: int  # prompt tokens served from its cache
    # What this session added since its previous request: all of it for its first request, and
    # for one whose history compaction rewrote (it shares no whole history with the previous).
    own_new: int
    prompt_s: float  # seconds the server spent reading

    @property
    def extra(self) -> int:
        """Tokens read that this session had already sent: the cost of sharing the server."""
        return max(0, self.read - self.own_new)

    @property
    def lost_s(self) -> float:
        return self.prompt_s * self.extra / self.read if self.read else 0.0


def round_robin(sessions: Sequence[ReplaySession]) -> list[tuple[ReplaySession, int]]:
    """(session, position) in the order the requests are sent: the first of each, the second..."""
    longest = max((len(session.requests) for session in sessions), default=0)
    return [(session, i) for i in range(longest) for session in sessions if i < len(session.requests)]


async def interleave(
    base_url: str,
    sessions: Sequence[ReplaySession],
    *,
    api_key: str | None = None,
    model: str | None = None,
    max_tokens: int = 16,
    progress: Callable[[InterleavedRequest], None] | None = None,
) -> list[InterleavedRequest]:
    """Send every request, round-robin, one at a time; answers are capped at ``max_tokens``
    (what is measured is the reading of prompts, not the writing of answers)."""
    results: list[InterleavedRequest] = []
    previous: dict[str, tuple[int, list[dict[str, Any]]]] = {}
    async with httpx2.AsyncClient(timeout=httpx2.Timeout(30.0, read=1800.0)) as client:
        for session, position in round_robin(sessions):
            request = session.requests[position]
            body: dict[str, Any] = {k: v for k, v in request.sampling.items() if k in SAMPLING_FIELDS and k != "stop"}
            body.update(messages=request.messages, max_tokens=max_tokens, temperature=0.0, cache_prompt=True)
            if request.tools:
                body["tools"] = request.tools
            if model:
                body["model"] = model
            response = await client.post(f"{base_url}/v1/chat/completions", json=body, headers=auth_headers(api_key))
            response.raise_for_status()
            timings = response.json().get("timings") or {}
            read, reused = int(timings.get("prompt_n") or 0), int(timings.get("cache_n") or 0)
            total = read + reused
            own_new = _own_new(total, read, request.messages, previous.get(session.name))
            previous[session.name] = (total, request.messages)
            measured = InterleavedRequest(
                session.name,
                request.index,
                total,
                read,
                reused,
                max(own_new, 0),
                float(timings.get("prompt_ms") or 0) / 1000,
            )
            results.append(measured)
            if progress is not None:
                progress(measured)
    return results


def _own_new(
    total: int, read: int, messages: list[dict[str, Any]], before: tuple[int, list[dict[str, Any]]] | None
) -> int:
    """Tokens this request adds to its session's previous one; what it read, when it does not
    extend that one (its first request, or a history compaction rewrote)."""
    if before is None:
        return read
    previous_total, previous_messages = before
    if messages[: len(previous_messages)] != previous_messages:
        return read
    return max(total - previous_total, 0)
