"""From raw rows to the figures a person reads: medians over runs, speedups against the first
target, acceptance pooled over runs, and the client/server overhead ratio."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from statistics import median

from server.bench.results import RequestResult, TargetResult

OVERALL = "overall"
# Client-observed tok/s over server tok/s. Below this the runtime itself costs noticeable speed.
OVERHEAD_GOAL = 0.97


@dataclass(frozen=True)
class Cell:
    """One target on one prompt (or overall): medians over the successful runs."""

    target: str
    prompt: str
    runs_ok: int
    runs_failed: int
    server_tps: float | None = None
    client_tps: float | None = None
    gen_seconds: float | None = None
    completion_tokens: float | None = None
    prompt_tokens: float | None = None
    acceptance: float | None = None  # accepted / drafted, pooled over the runs
    drafted: int | None = None
    accepted: int | None = None
    overhead_ratio: float | None = None
    speedup: float | None = None  # server tok/s against the first target on the same prompt
    # "client" where the server sent no timings of its own (vLLM, SGLang): server_tps then holds
    # the tok/s this client measured over the stream, the nearest figure there is.
    tps_source: str = "server"


@dataclass(frozen=True)
class Summary:
    prompts: list[str]
    targets: list[str]
    cells: list[Cell] = field(default_factory=list)
    overhead_ratio: float | None = None  # median over every successful request of every target
    overhead_goal: float = OVERHEAD_GOAL

    def cell(self, target: str, prompt: str) -> Cell | None:
        return next((c for c in self.cells if c.target == target and c.prompt == prompt), None)

    @property
    def overhead_ok(self) -> bool | None:
        return None if self.overhead_ratio is None else self.overhead_ratio >= self.overhead_goal


def summarize(targets: Sequence[TargetResult], prompt_names: Sequence[str]) -> Summary:
    rows_by_target = {t.label: t.requests for t in targets}
    cells: list[Cell] = []
    for name in [*prompt_names, OVERALL]:
        baseline: float | None = None
        for i, target in enumerate(targets):
            rows = [r for r in rows_by_target[target.label] if name == OVERALL or r.prompt == name]
            cell = _cell(target.label, name, rows)
            if name == OVERALL and cell.acceptance is None and target.metrics is not None:
                # SGLang publishes its acceptance only as an average (no counts per request).
                cell = replace(cell, acceptance=target.metrics.acceptance)
            if i == 0:
                baseline = cell.server_tps
            speedup = cell.server_tps / baseline if cell.server_tps and baseline else None
            cells.append(replace(cell, speedup=speedup))
    ratios = [r.overhead_ratio for t in targets for r in t.requests if r.ok and r.overhead_ratio is not None]
    return Summary(
        prompts=list(prompt_names),
        targets=[t.label for t in targets],
        cells=cells,
        overhead_ratio=median(ratios) if ratios else None,
    )


def _cell(target: str, prompt: str, rows: Sequence[RequestResult]) -> Cell:
    ok = [r for r in rows if r.ok]
    drafted, accepted = pooled_drafts(ok)
    server_tps, source = _median(r.server_tps for r in ok), "server"
    if server_tps is None and ok:
        server_tps, source = _median(r.client_tps for r in ok), "client"
    return Cell(
        target=target,
        prompt=prompt,
        runs_ok=len(ok),
        runs_failed=len(rows) - len(ok),
        server_tps=server_tps,
        tps_source=source,
        client_tps=_median(r.client_tps for r in ok),
        gen_seconds=_median(r.gen_seconds for r in ok),
        completion_tokens=_median(r.completion_tokens for r in ok),
        prompt_tokens=_median(r.prompt_tokens for r in ok),
        acceptance=accepted / drafted if drafted and accepted is not None else None,
        drafted=drafted,
        accepted=accepted,
        overhead_ratio=_median(r.overhead_ratio for r in ok),
    )


def pooled_drafts(rows: Iterable[RequestResult]) -> tuple[int | None, int | None]:
    """Drafted and accepted tokens over the rows that drafted; (None, None) when none did:
    nothing drafted is "no speculation", not 0 % accepted."""
    drafted_rows = [r for r in rows if r.draft_n]
    if not drafted_rows:
        return None, None
    return sum(r.draft_n or 0 for r in drafted_rows), sum(r.draft_accepted or 0 for r in drafted_rows)


def _median(values: Iterable[float | int | None]) -> float | None:
    present = [float(v) for v in values if v is not None]
    return median(present) if present else None
