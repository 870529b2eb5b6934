"""What a step and a drafted token cost on this server, fitted to its own timings.

An answer of ``n`` tokens that drafted ``d`` tokens and had ``a`` of them accepted took
``s = n - a`` steps (each step samples one token and keeps the accepted drafts). Its generation
time is modelled as

    ms = s * t0 + d * c

where ``t0`` is one plain step and ``c`` what each drafted token adds to the step that verifies
it. Both are fitted together, by least squares over the latest answers (drafted or not), rather
than ``t0`` from the plain answers alone: plain answers are few and often short, and a short
answer's per-token time carries the request's fixed costs. Taken that way, the break-even on the
edit-heavy sample session came out at 61%, where the same requests against the server without
drafting show 30-47% and the fit gives 44%. A least-squares fit weighs each answer by its size,
so the long answers, where the time goes, decide.

``c / t0`` is the break-even acceptance: a drafted token pays when it is accepted more often than
that. On a GPU serving a large model, verifying a few more tokens costs little (``c`` is small);
on a CPU serving a small model with a large vocabulary, every verified position computes the
full output layer, and ``c`` is near half of ``t0``.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field

# Answers the fit looks at: enough to smooth one odd answer, few enough to follow a session
# whose context grows (a longer context makes every step slower). Plain answers are kept apart,
# so that a session where every answer drafts keeps the one that tells t0 from c.
WINDOW = 16
PLAIN_WINDOW = 4


@dataclass(frozen=True)
class CostFit:
    ms_per_step: float  # t0
    ms_per_drafted: float  # c

    @property
    def break_even(self) -> float:
        """The acceptance above which drafting saves time."""
        return self.ms_per_drafted / self.ms_per_step


@dataclass
class DraftCosts:
    # (generation ms, steps, drafted tokens) of the latest answers that drafted, and that did not
    drafted: deque[tuple[float, int, int]] = field(default_factory=lambda: deque(maxlen=WINDOW))
    plain: deque[tuple[float, int, int]] = field(default_factory=lambda: deque(maxlen=PLAIN_WINDOW))

    def add(self, ms: float, steps: int, drafted: int) -> None:
        if math.isfinite(ms) and ms > 0 and steps > 0 and drafted >= 0:
            (self.drafted if drafted > 0 else self.plain).append((ms, steps, drafted))

    def fit(self) -> CostFit | None:
        """t0 and c from the latest answers; None until both plain and drafted answers came."""
        if not (self.plain and self.drafted):
            return None
        import numpy as np  # only where a session drafts per request

        samples = [*self.plain, *self.drafted]
        rows = np.array([[steps, drafted] for _, steps, drafted in samples], dtype=float)
        times = np.array([ms for ms, _, _ in samples], dtype=float)
        (t0, c), *_ = np.linalg.lstsq(rows, times, rcond=None)
        if c < 0:
            # Noise can push the cost of a draft below zero. Drafting is never free: fit t0 alone
            # with c at zero, so that the two stay consistent.
            steps = rows[:, 0]
            t0, c = float(times @ steps / (steps @ steps)), 0.0
        if not (math.isfinite(t0) and math.isfinite(c) and t0 > 0):
            return None
        return CostFit(ms_per_step=float(t0), ms_per_drafted=float(c))
