"""Totals over finished requests, each folded in once from its last ``Metrics`` event.

A request's ``Metrics`` events are cumulative (each one repeats the request's counts so far), so
only the last one of a request is folded: the headless summary folds a run's requests, the TUI's
metrics model a turn's.
"""

from __future__ import annotations

from dataclasses import dataclass

from agent.events import Metrics


@dataclass
class RequestTotals:
    generated_tokens: int = 0
    generation_seconds: float = 0.0
    # None until a request reported drafts: "no speculative decoding" is not "nothing accepted".
    drafted: int | None = None
    accepted: int | None = None

    def add(self, metrics: Metrics) -> None:
        """Fold one finished request (its last Metrics event) into the totals."""
        if metrics.predicted_per_second:
            self.generated_tokens += metrics.predicted_n
            self.generation_seconds += metrics.predicted_n / metrics.predicted_per_second
        if metrics.draft_n is not None:
            self.drafted = (self.drafted or 0) + metrics.draft_n
            self.accepted = (self.accepted or 0) + (metrics.draft_n_accepted or 0)

    @property
    def acceptance(self) -> float | None:
        """The share of drafted tokens the target accepted; None when nothing was drafted."""
        return (self.accepted or 0) / self.drafted if self.drafted else None

    @property
    def tokens_per_second(self) -> float | None:
        """Generation speed over the requests' own generation time (prompt reading excluded)."""
        return self.generated_tokens / self.generation_seconds if self.generation_seconds > 0 else None
