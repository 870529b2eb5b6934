"""Speculative decoding chosen per request, from what the request is for and what drafting has
earned so far in this session.

Requests fall in three kinds by what comes before them: after a read (``view``, ``grep``,
``glob``: the answer often copies text the context holds, as an edit does), after another tool
result (a next tool call, JSON), and after the user (an answer or a plan, prose). Each kind keeps
its own acceptance.

Whether drafting pays follows from the server's own timings. A request that generated ``n``
tokens in ``s`` steps, drafting ``d`` tokens of which ``a`` were accepted (``n = s + a``), took
``s * T`` where ``T`` is one step's time; without drafting it would have taken ``n * t0``. It saved
``a * t0 - s * (T - t0)``: positive exactly when the acceptance ``a / d`` is above

    break_even = s * (T - t0) / (d * t0)

the time one drafted token costs, in tokens' worth of time. ``t0`` comes from the requests that
drafted nothing (the agent asks for one such request early when none came by itself), the cost
from those that drafted. A kind whose acceptance falls below the break-even is sent with drafting
off (``speculative.n_max = 0``) and tried again every few requests, since acceptance changes as a
session goes on.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

RequestKind = Literal["after_read", "after_tool", "after_user"]
READ_TOOLS = frozenset({"view", "grep", "glob"})
# Weight of the newest observation in the running averages.
_ALPHA = 0.3
# Requests of a kind sent with drafting off before it is tried again.
RETRY_AFTER = 4
# Drafted tokens a kind needs before its acceptance is trusted.
MIN_DRAFTED = 8


@dataclass(frozen=True)
class SpeculationChoice:
    kind: RequestKind
    n_max: int | None  # None: the server's own settings; 0: no drafting
    reason: str

    def request_fields(self) -> dict[str, Any]:
        return {} if self.n_max is None else {"speculative.n_max": self.n_max}


@dataclass
class _KindStats:
    drafted: int = 0
    acceptance: float | None = None
    off_since: int = 0  # requests sent with drafting off since it was last tried


def _average(old: float | None, new: float) -> float:
    return new if old is None else (1 - _ALPHA) * old + _ALPHA * new


def request_kind(messages: Sequence[Mapping[str, Any]]) -> RequestKind:
    """What the next request answers: the user, a read, or another tool's result."""
    last = messages[-1] if messages else {}
    if last.get("role") != "tool":
        return "after_user"
    calls = {
        call.get("id"): (call.get("function") or {}).get("name")
        for message in messages
        if message.get("role") == "assistant"
        for call in message.get("tool_calls") or []
    }
    return "after_read" if calls.get(last.get("tool_call_id")) in READ_TOOLS else "after_tool"


@dataclass
class SpeculationPolicy:
    """Per-request settings for a server that honours them (see server/patches)."""

    ms_per_token: float | None = None  # t0: decoding without drafts
    kinds: dict[str, _KindStats] = field(default_factory=dict)
    requests: int = 0
    # The latest answers that drafted: (generation ms, steps, drafted tokens).
    drafting_samples: deque[tuple[float, int, int]] = field(default_factory=lambda: deque(maxlen=8))

    @property
    def ms_per_drafted(self) -> float | None:
        """What one drafted token adds to a step: (s * T - s * t0) / d, over the latest answers."""
        if self.ms_per_token is None or not self.drafting_samples:
            return None
        t0 = self.ms_per_token
        costs = [max(0.0, (ms - steps * t0) / drafted) for ms, steps, drafted in self.drafting_samples]
        return sum(costs) / len(costs)

    @property
    def break_even(self) -> float | None:
        per_drafted = self.ms_per_drafted
        if per_drafted is None or self.ms_per_token is None:
            return None
        return per_drafted / self.ms_per_token

    def choose(self, messages: Sequence[Mapping[str, Any]]) -> SpeculationChoice:
        kind = request_kind(messages)
        stats = self.kinds.setdefault(kind, _KindStats())
        self.requests += 1
        if self.ms_per_token is None and self.drafting_samples:
            # No request has drafted nothing yet: one without drafts measures t0.
            return SpeculationChoice(kind, 0, "drafting off once to measure decoding without drafts")
        even = self.break_even
        if even is None or stats.acceptance is None or stats.drafted < MIN_DRAFTED:
            return SpeculationChoice(kind, None, f"{_label(kind)}: drafting on, measuring acceptance")
        if stats.acceptance >= even:
            stats.off_since = 0
            return SpeculationChoice(
                kind, None, f"{_label(kind)}: drafting on, acceptance {stats.acceptance:.0%} ≥ break-even {even:.0%}"
            )
        stats.off_since += 1
        if stats.off_since > RETRY_AFTER:
            stats.off_since = 0
            return SpeculationChoice(kind, None, f"{_label(kind)}: drafting on again to re-measure acceptance")
        return SpeculationChoice(
            kind, 0, f"{_label(kind)}: drafting off, acceptance {stats.acceptance:.0%} < break-even {even:.0%}"
        )

    def observe(self, choice: SpeculationChoice, timings: Mapping[str, Any] | None) -> None:
        """Learn from one answer's ``timings``: t0, the cost of a drafted token, the kind's acceptance."""
        if not timings:
            return
        generated = int(timings.get("predicted_n") or 0)
        ms = float(timings.get("predicted_ms") or 0.0)
        drafted = int(timings.get("draft_n") or 0)
        accepted = int(timings.get("draft_n_accepted") or 0)
        if generated < 2 or ms <= 0:
            return
        if drafted == 0:
            self.ms_per_token = _average(self.ms_per_token, ms / generated)
            return
        stats = self.kinds.setdefault(choice.kind, _KindStats())
        stats.drafted += drafted
        stats.acceptance = _average(stats.acceptance, accepted / drafted)
        self.drafting_samples.append((ms, max(1, generated - accepted), drafted))


def _label(kind: RequestKind) -> str:
    return {"after_read": "after a read", "after_tool": "after a tool", "after_user": "after the user"}[kind]
