"""A replay repeated: the median and spread of each target's speedups over the runs.

One replay is one pass, and on a busy machine one pass says little (four runs of one replay have
given session× from 0.83 to 1.61). The runs interleave the targets (A B, then B A, ...) so that a
machine getting slower or faster during the bench hits every target alike; each run is summarised
on its own against the first target, and the figures here are over those runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from statistics import median
from typing import TypeVar

from server.bench.replay_summary import ReplaySummary

T = TypeVar("T")


def interleaved(targets: Sequence[T], run: int) -> list[T]:
    """The order of the targets in run ``run`` (from 0): as given, then reversed, and so on."""
    return list(targets) if run % 2 == 0 else list(reversed(targets))


@dataclass(frozen=True)
class Spread:
    values: tuple[float, ...]

    @property
    def median(self) -> float:
        return median(self.values)

    @property
    def low(self) -> float:
        return min(self.values)

    @property
    def high(self) -> float:
        return max(self.values)

    @property
    def width(self) -> float:
        return self.high - self.low


@dataclass(frozen=True)
class TargetRuns:
    target: str
    session: Spread | None  # session× (model time) per run; None for the baseline or a failed target
    token: Spread | None  # token× (generation rate) per run
    model_seconds: Spread

    @property
    def inconclusive(self) -> bool:
        """The runs disagree more than the median differs from 1: the size of the effect is not known,
        and unless every run lies on one side of 1 (``all_one_side``), neither is its sign."""
        return (
            self.session is not None
            and len(self.session.values) > 1
            and self.session.width > abs(self.session.median - 1.0)
        )

    @property
    def all_one_side(self) -> bool:
        """Every run lies on the same side of 1×. With few runs that can be chance (3 runs of two
        equal targets do it one time in four), so the report counts the runs rather than call it."""
        return self.session is not None and (self.session.low > 1.0 or self.session.high < 1.0)


def summarize_runs(summaries: Sequence[ReplaySummary]) -> list[TargetRuns]:
    """Per target, over runs each summarised against the same first target."""
    if not summaries:
        return []
    out = []
    for name in summaries[0].targets:
        totals = [s.total(name) for s in summaries]
        present = [t for t in totals if t is not None]
        session = [t.session_speedup for t in present if t.session_speedup is not None]
        token = [t.token_speedup for t in present if t.token_speedup is not None]
        first = name == summaries[0].targets[0]
        out.append(
            TargetRuns(
                target=name,
                session=None if first or not session else Spread(tuple(session)),
                token=None if first or not token else Spread(tuple(token)),
                model_seconds=Spread(tuple(t.model_seconds for t in present) or (0.0,)),
            )
        )
    return out
