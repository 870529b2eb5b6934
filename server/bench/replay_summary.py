"""From a replay's rows to what a person reads: per target, the session's model time, prefill and
cache figures, generation speed and acceptance, the speedups against the first target, and the
same speed and acceptance by prompt length.

Totals are taken over the requests that succeeded on every target, so that a target which failed
some (a prompt over its context) is not made to look faster by doing less. Rates are pooled
(tokens over seconds), not medians: a replay is one pass, and its long answers should weigh as
much as they took.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

from server.bench.replay_plan import ReplaySession
from server.bench.results import RequestResult, TargetResult
from server.bench.summary import pooled_drafts

# Prompt-length bins: powers of two, as context sizes are.
BIN_EDGES: tuple[int, ...] = (512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072)


@dataclass(frozen=True)
class ReplayTotals:
    target: str
    requests_ok: int
    requests_failed: int
    model_seconds: float  # request sent to answer complete, summed: the model's share of the session
    prompt_seconds: float
    prompt_tokens: int
    cached_tokens: int
    processed_tokens: int
    generated_tokens: int
    gen_seconds: float
    drafted: int | None
    accepted: int | None
    # With the tools' recorded time added: what the session's wall-clock would have been.
    session_seconds: float
    model: str | None = None  # the model file the server loaded
    # False when it serves another model than the first target: its speedups then compare models.
    same_model: bool = True
    session_speedup: float | None = None  # model time of the first target over this one's
    token_speedup: float | None = None  # generation tok/s over the first target's
    wall_speedup: float | None = None  # the same as session_speedup, with the tools' time in both

    @property
    def tps(self) -> float | None:
        return self.generated_tokens / self.gen_seconds if self.gen_seconds > 0 else None

    @property
    def prefill_tps(self) -> float | None:
        return self.processed_tokens / self.prompt_seconds if self.prompt_seconds > 0 else None

    @property
    def acceptance(self) -> float | None:
        return self.accepted / self.drafted if self.drafted and self.accepted is not None else None

    @property
    def cached_share(self) -> float | None:
        return self.cached_tokens / self.prompt_tokens if self.prompt_tokens else None


@dataclass(frozen=True)
class BinCell:
    target: str
    requests: int
    generated_tokens: int
    gen_seconds: float
    drafted: int | None
    accepted: int | None

    @property
    def tps(self) -> float | None:
        return self.generated_tokens / self.gen_seconds if self.gen_seconds > 0 else None

    @property
    def acceptance(self) -> float | None:
        return self.accepted / self.drafted if self.drafted and self.accepted is not None else None


@dataclass(frozen=True)
class LengthBin:
    low: int
    high: int | None  # None: no upper edge
    cells: list[BinCell] = field(default_factory=list)

    @property
    def label(self) -> str:
        if self.high is None:
            return f"≥{_k(self.low)}"
        return f"<{_k(self.high)}" if self.low == 0 else f"{_k(self.low)}–{_k(self.high)}"

    def cell(self, target: str) -> BinCell | None:
        return next((c for c in self.cells if c.target == target), None)


@dataclass(frozen=True)
class ReplaySummary:
    session: str
    requests: int
    common: int  # requests every target completed; the totals are over these
    tool_seconds: float
    targets: list[str]
    totals: list[ReplayTotals]
    bins: list[LengthBin]

    def total(self, target: str) -> ReplayTotals | None:
        return next((t for t in self.totals if t.target == target), None)


def summarize_replay(session: ReplaySession, targets: Sequence[TargetResult]) -> ReplaySummary:
    names = [request.name for request in session.requests]
    by_target = [{row.prompt: row for row in t.requests} for t in targets]
    # A target that completed nothing (it did not start) would leave nothing to compare; it is
    # left out of the common set and shows as failed.
    live = [rows for rows in by_target if any(row.ok for row in rows.values())]
    ok_everywhere = [n for n in names if all(n in rows and rows[n].ok for rows in live)]
    common = set(ok_everywhere)
    tool_seconds = sum(r.tool_seconds for r in session.requests if r.name in common)
    totals: list[ReplayTotals] = []
    for target, rows_by_name in zip(targets, by_target, strict=True):
        rows = [rows_by_name[n] for n in ok_everywhere if n in rows_by_name and rows_by_name[n].ok]
        failed = sum(1 for row in target.requests if not row.ok)
        totals.append(_totals(target, rows, len(target.requests) - failed, failed, tool_seconds))
    totals = _with_speedups(totals)
    return ReplaySummary(
        session=session.name,
        requests=len(names),
        common=len(ok_everywhere),
        tool_seconds=tool_seconds,
        targets=[t.label for t in targets],
        totals=totals,
        bins=length_bins(targets),
    )


def bin_of(prompt_tokens: int) -> tuple[int, int | None]:
    """The (low, high) edges of the bin a prompt of this many tokens falls in."""
    low = 0
    for edge in BIN_EDGES:
        if prompt_tokens < edge:
            return low, edge
        low = edge
    return low, None


def length_bins(targets: Sequence[TargetResult]) -> list[LengthBin]:
    """Each target's successful requests by prompt length, as that target's server counted it."""
    grouped: dict[tuple[int, int | None], dict[str, list[RequestResult]]] = {}
    for target in targets:
        for row in target.requests:
            if row.ok and row.prompt_tokens is not None:
                grouped.setdefault(bin_of(row.prompt_tokens), {}).setdefault(target.label, []).append(row)
    bins: list[LengthBin] = []
    for (low, high), by_target in sorted(grouped.items(), key=lambda item: item[0][0]):
        cells = [_bin_cell(t.label, by_target.get(t.label, [])) for t in targets]
        bins.append(LengthBin(low, high, cells))
    return bins


def _totals(target: TargetResult, rows: list[RequestResult], ok: int, failed: int, tool_seconds: float) -> ReplayTotals:
    drafted, accepted = pooled_drafts(rows)
    model_seconds = _sum(r.wall_s for r in rows)
    return ReplayTotals(
        target=target.label,
        model=target.model,
        requests_ok=ok,
        requests_failed=failed,
        model_seconds=model_seconds,
        prompt_seconds=_sum(r.prompt_seconds for r in rows),
        prompt_tokens=int(_sum(r.prompt_tokens for r in rows)),
        cached_tokens=int(_sum(r.cached_tokens for r in rows)),
        processed_tokens=int(_sum(_processed(r) for r in rows)),
        generated_tokens=int(_sum(r.completion_tokens for r in rows if r.gen_seconds)),
        gen_seconds=_sum(r.gen_seconds for r in rows if r.completion_tokens),
        drafted=drafted,
        accepted=accepted,
        session_seconds=model_seconds + tool_seconds,
    )


def _with_speedups(totals: list[ReplayTotals]) -> list[ReplayTotals]:
    if not totals:
        return totals
    base = totals[0]
    return [
        replace(
            t,
            session_speedup=_ratio(base.model_seconds, t.model_seconds),
            token_speedup=_ratio(t.tps, base.tps),
            wall_speedup=_ratio(base.session_seconds, t.session_seconds),
            same_model=None in (t.model, base.model) or t.model == base.model,
        )
        for t in totals
    ]


def _bin_cell(label: str, rows: list[RequestResult]) -> BinCell:
    drafted, accepted = pooled_drafts(rows)
    return BinCell(
        target=label,
        requests=len(rows),
        generated_tokens=int(_sum(r.completion_tokens for r in rows if r.gen_seconds)),
        gen_seconds=_sum(r.gen_seconds for r in rows if r.completion_tokens),
        drafted=drafted,
        accepted=accepted,
    )


def _processed(row: RequestResult) -> int | None:
    if row.prompt_processed is not None:
        return row.prompt_processed
    if row.prompt_tokens is not None and row.cached_tokens is not None:
        return max(row.prompt_tokens - row.cached_tokens, 0)
    return row.prompt_tokens


def _sum(values: Iterable[float | int | None]) -> float:
    return float(sum(v for v in values if v is not None))


def _ratio(top: float | None, bottom: float | None) -> float | None:
    return top / bottom if top and bottom else None


def _k(tokens: int) -> str:
    return f"{tokens // 1024}k" if tokens >= 1024 else str(tokens)
