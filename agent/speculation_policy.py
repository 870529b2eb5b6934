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
off (``speculative.n_max = 0``) and tried again after a few requests, since acceptance changes as
a session goes on; each retry that finds it still below waits twice as long for the next. Where
the break-even is 100 % or more (a drafter slower than the model it drafts for), drafting is off
for every kind.
"""

from __future__ import annotations

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
IGNORED_REASON = "the server drafted on a request sent without drafts: its own settings from now on"


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
    retry_after: int = RETRY_AFTER


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

    kinds: dict[str, _KindStats] = field(default_factory=dict)
    requests: int = 0
    costs: DraftCosts = field(default_factory=DraftCosts)
    # Set when an answer sent with drafting off drafted anyway: the server ignores the settings
    # (the probe said otherwise: another binary now answers at that address), so the agent stops
    # sending them rather than learn from answers that did not follow its choices.
    ignored: bool = False

    @property
    def ms_per_token(self) -> float | None:
        """t0: one step without drafts, fitted with the cost of drafts when there were some."""
        fit = self.costs.fit()
        return fit.ms_per_step if fit is not None else self.costs.plain_ms_per_step()

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
        even = self.break_even
        if even is not None and even >= 1.0:
            # A drafted token costs more than the step it could save: no acceptance pays, so no
            # kind needs measuring. The fit follows t0 as plain answers come, and may bring it back.
            return SpeculationChoice(
                kind, 0, f"drafting off: a drafted token costs more than a step saves (break-even {even:.0%})"
            )
        if even is None or stats.acceptance is None or stats.drafted < MIN_DRAFTED:
            return SpeculationChoice(kind, None, f"{_label(kind)}: drafting on, measuring acceptance")
        if stats.acceptance >= even:
            stats.off_since, stats.retry_after = 0, RETRY_AFTER
            return SpeculationChoice(
                kind, None, f"{_label(kind)}: drafting on, acceptance {stats.acceptance:.0%} ≥ break-even {even:.0%}"
            )
        stats.off_since += 1
        if stats.off_since > stats.retry_after:
            stats.off_since = 0
            stats.retry_after = min(2 * stats.retry_after, MOST_RETRY_AFTER)
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
        if choice.n_max == 0 and drafted > 0:
            self.ignored = True
            return
        steps = max(1, generated - accepted)
        self.costs.add(ms, steps, drafted)
        if drafted == 0:
            return
        stats = self.kinds.setdefault(choice.kind, _KindStats())
        stats.drafted += drafted
        stats.acceptance = _average(stats.acceptance, accepted / drafted)


def _label(kind: RequestKind) -> str:
    return {"after_read": "after a read", "after_tool": "after a tool", "after_user": "after the user"}[kind]
