"""Speculative decoding chosen per request, from what the request is for and what drafting has
earned so far in this session.

Requests fall in three kinds by what comes before them: after a read (``view``, ``grep``,
``glob``: the answer often copies text the context holds, as an edit does), after another tool
result (a next tool call, JSON), and after the user (an answer or a plan, prose). Each kind keeps
its own acceptance.

Whether drafting pays follows from the server's own timings (agent.draft_costs): a plain step
costs ``t0``, each drafted token adds ``c`` to the step that verifies it, and an accepted draft
saves a step. Drafting pays exactly when the acceptance is above ``c / t0``, the break-even. The
fit needs answers with and without drafts; when only drafted ones came, the agent asks for one
request without drafts. A kind whose acceptance falls below the break-even is sent with drafting
off (``speculative.n_max = 0``) and tried again after a few requests of that kind, since
acceptance changes as a session goes on; each retry that finds it still below waits twice as long
for the next. Where the break-even is 100 % or more (a drafter slower than the model it drafts
for), drafting is off for every kind, tried again the same way.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from agent.draft_costs import DraftCosts

RequestKind = Literal["after_read", "after_tool", "after_user"]
READ_TOOLS = frozenset({"view", "grep", "glob"})
# Weight of the newest observation in the running averages.
_ALPHA = 0.3
# Requests of a kind sent with drafting off before it is tried again; each retry that confirms
# the kind below break-even doubles the wait, up to the most.
RETRY_AFTER = 4
MOST_RETRY_AFTER = 32
# Drafted tokens a kind needs before its acceptance is trusted.
MIN_DRAFTED = 8
# Answers that drafted before the break-even is acted on.
MIN_FIT_ANSWERS = 3
# Answers sent without drafts that drafted anyway, before the server is taken to ignore the
# settings: one could be a counter the server had not yet reset.
IGNORED_AFTER = 2
IGNORED_REASON = "the server drafted on a request sent without drafts: its own settings from now on"


@dataclass(frozen=True)
class SpeculationChoice:
    kind: RequestKind
    n_max: int | None  # None: the server's own settings; 0: no drafting
    reason: str

    def request_fields(self) -> dict[str, Any]:
        return {} if self.n_max is None else {"speculative.n_max": self.n_max}


@dataclass
class _Backoff:
    """Requests sent with drafting off since it was last tried, and how many until the next try."""

    off_since: int = 0
    retry_after: int = RETRY_AFTER

    def on(self) -> None:
        self.off_since, self.retry_after = 0, RETRY_AFTER

    def retry_now(self) -> bool:
        """Counts one more request sent without drafts; True when this one should draft instead."""
        self.off_since += 1
        if self.off_since <= self.retry_after:
            return False
        self.off_since, self.retry_after = 0, min(2 * self.retry_after, MOST_RETRY_AFTER)
        return True


@dataclass
class _KindStats:
    drafted: int = 0
    # Accepted and drafted tokens, each older answer weighing (1 - _ALPHA) less than the next:
    # their ratio is per drafted token, the unit of the break-even, so a long answer counts for
    # more than a short one, and a newer one more than an older.
    recent_accepted: float = 0.0
    recent_drafted: float = 0.0
    backoff: _Backoff = field(default_factory=_Backoff)

    @property
    def acceptance(self) -> float | None:
        return self.recent_accepted / self.recent_drafted if self.recent_drafted > 0 else None

    def add(self, accepted: int, drafted: int) -> None:
        self.drafted += drafted
        self.recent_accepted = (1 - _ALPHA) * self.recent_accepted + accepted
        self.recent_drafted = (1 - _ALPHA) * self.recent_drafted + drafted


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

    kinds: dict[str, _KindStats] = field(default_factory=dict)
    requests: int = 0
    costs: DraftCosts = field(default_factory=DraftCosts)
    # Answers sent with drafting off that drafted anyway. At IGNORED_AFTER of them the server is
    # taken to ignore the settings (the probe said otherwise: another binary now answers at that
    # address), and the agent stops sending them rather than learn from answers that did not
    # follow its choices.
    drafted_when_off: int = 0
    # Drafting off for every kind (a draft costs more than a step), tried again now and then.
    all_off: _Backoff = field(default_factory=_Backoff)

    @property
    def ignored(self) -> bool:
        return self.drafted_when_off >= IGNORED_AFTER

    @property
    def break_even(self) -> float | None:
        fit = self.costs.fit()
        return fit.break_even if fit is not None else None

    def choose(self, messages: Sequence[Mapping[str, Any]]) -> SpeculationChoice:
        kind = request_kind(messages)
        stats = self.kinds.setdefault(kind, _KindStats())
        self.requests += 1
        if self.ignored:
            return SpeculationChoice(kind, None, IGNORED_REASON)
        if self.costs.drafted and not self.costs.plain:
            # Every answer so far drafted: one without drafts tells t0 from the cost of drafts.
            return SpeculationChoice(kind, 0, "drafting off once to measure decoding without drafts")
        # The first fits, from one plain and one drafted answer, solve two equations exactly and
        # say little: the break-even is not acted on before a few drafted answers.
        even = self.break_even if len(self.costs.drafted) >= MIN_FIT_ANSWERS else None
        if even is not None and even >= 1.0:
            # A drafted token costs more than the step it could save: no acceptance pays, so no
            # kind needs measuring. Tried again now and then, since the costs change as the
            # context grows.
            if self.all_off.retry_now():
                return SpeculationChoice(kind, None, "drafting on again to re-measure what a draft costs")
            return SpeculationChoice(
                kind, 0, f"drafting off: a drafted token costs more than a step saves (break-even {even:.0%})"
            )
        self.all_off.on()
        acceptance = stats.acceptance
        if even is None or acceptance is None or stats.drafted < MIN_DRAFTED:
            return SpeculationChoice(kind, None, f"{_label(kind)}: drafting on, measuring acceptance")
        if acceptance >= even:
            stats.backoff.on()
            return SpeculationChoice(
                kind, None, f"{_label(kind)}: drafting on, acceptance {acceptance:.0%} ≥ break-even {even:.0%}"
            )
        if stats.backoff.retry_now():
            return SpeculationChoice(kind, None, f"{_label(kind)}: drafting on again to re-measure acceptance")
        return SpeculationChoice(
            kind, 0, f"{_label(kind)}: drafting off, acceptance {acceptance:.0%} < break-even {even:.0%}"
        )

    def observe(self, choice: SpeculationChoice, timings: Mapping[str, Any] | None) -> None:
        """Learn from one answer's ``timings``: t0, the cost of a drafted token, the kind's acceptance."""
        if not timings:
            return
        generated = int(timings.get("predicted_n") or 0)
        ms = float(timings.get("predicted_ms") or 0.0)
        drafted = int(timings.get("draft_n") or 0)
        accepted = int(timings.get("draft_n_accepted") or 0)
        if generated < 2 or not math.isfinite(ms) or ms <= 0 or drafted < 0 or not 0 <= accepted <= drafted:
            return
        if choice.n_max == 0 and drafted > 0:
            self.drafted_when_off += 1
            return
        self.costs.add(ms, max(1, generated - accepted), drafted)
        if drafted > 0:
            self.kinds.setdefault(choice.kind, _KindStats()).add(accepted, drafted)


def _label(kind: RequestKind) -> str:
    return {"after_read": "after a read", "after_tool": "after a tool", "after_user": "after the user"}[kind]
