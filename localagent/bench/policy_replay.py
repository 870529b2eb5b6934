"""A replay that sends, with each of the session's requests, the drafting the agent would have
chosen for it (agent.speculation_policy), learning from each answer as the agent does: the same
profile with fixed settings against its own per-request choices, measured on agent traffic."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from agent.speculation_policy import SpeculationChoice, SpeculationPolicy
from server.bench.client import Endpoint
from server.bench.replay_plan import ReplayWorkload
from server.bench.results import RequestResult
from server.bench.workload import Row

PER_REQUEST_SUFFIX = " per-request"


@dataclass
class PolicyReplay:
    base: ReplayWorkload
    policy: SpeculationPolicy = field(default_factory=SpeculationPolicy)
    choices: dict[str, SpeculationChoice] = field(default_factory=dict)
    # Whether any pass found the server ignoring the settings (each pass starts a new policy).
    ignored_in_a_pass: bool = False

    def rows(self) -> list[Row]:
        return self.base.rows()

    def body(self, endpoint: Endpoint, row: Row, stop: Sequence[str] | None) -> dict[str, Any]:
        if row.name == self.base.session.requests[0].name:
            # A new pass over the session: the agent starts it knowing nothing.
            self.ignored_in_a_pass = self.ignored
            self.policy, self.choices = SpeculationPolicy(), {}
        body = self.base.body(endpoint, row, stop)
        choice = self.policy.choose(body["messages"])
        self.choices[row.name] = choice
        body.update(choice.request_fields())
        return body

    @property
    def ignored(self) -> bool:
        """The server drafted on requests sent with drafting off: it ignores the settings."""
        return self.ignored_in_a_pass or self.policy.ignored

    def seed(self, row: Row) -> int:
        return self.base.seed(row)

    def order(self, rows: list[RequestResult]) -> None:
        self.base.order(rows)

    def measured(self, row: Row, result: RequestResult) -> None:
        choice = self.choices.get(row.name)
        if choice is None or not result.ok:
            return
        self.policy.observe(
            choice,
            {
                "predicted_n": result.completion_tokens or 0,
                "predicted_ms": (result.gen_seconds or 0.0) * 1000,
                "draft_n": result.draft_n or 0,
                "draft_n_accepted": result.draft_accepted or 0,
            },
        )
