"""What every kind of bench does at its end: record the sweep's winner (and save it when asked),
print a table at the width it needs, and fail the command when requests failed."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.measure import Measurement
from rich.table import Table

from localagent.console import out
from localagent.errors import LocalAgentError
from server.bench import sweep
from server.bench.configfile import save_profile_settings
from server.bench.results import BenchResults
from server.errors import BenchInputError


@dataclass
class SweepPlan:
    base: str  # the profile being tuned
    grid: list[dict[str, object]]
    variants: list[sweep.Variant] = field(default_factory=list)


class RunFailed(LocalAgentError):
    exit_code = 1


def record_sweep(
    results: BenchResults, plan: SweepPlan, best: sweep.Variant | None, scored_on: str, save: bool, config_file: Path
) -> BenchInputError | None:
    """Write the outcome into ``results.sweep``; with ``save``, the winner into the user config.
    A failed save is returned, to be raised once the results are written."""
    results.sweep = {
        "base": plan.base,
        "grid": plan.grid,
        "scored_on": scored_on,
        "best": best.label if best else None,
        "best_settings": best.changes if best else None,
        "saved": None,
    }
    if not save or best is None:
        return None
    if not best.changes:
        results.sweep["saved"] = "nothing: the current settings are already the fastest"
        return None
    try:
        results.sweep["saved"] = save_profile_settings(config_file, plan.base, "speculative", best.changes)
    except BenchInputError as exc:
        return exc
    return None


def raise_failures(results: BenchResults, out_dir: Path) -> None:
    failed = results.failed_requests
    if failed:
        total = sum(len(t.requests) for t in results.targets)
        label, row = failed[0]
        raise RunFailed(
            f"{len(failed)} of {total} requests failed (first: {label}, {row.prompt} run {row.run}: {row.error}); "
            f"they are marked in {out_dir / 'report.md'}"
        )


def print_wide(table: Table) -> None:
    # Piped output gets 80 columns from rich, which folds long profile names into unreadable
    # slivers; a file or pipe has no width to respect, so give the table what it needs.
    if out.is_terminal:
        out.print(table)
        return
    needed = Measurement.get(out, out.options.update_width(1000), table).maximum
    Console(file=out.file, width=max(out.width, needed), highlight=False).print(table)


def print_ending(
    results: BenchResults, out_dir: Path, sweep_line: str | None, save_error: BenchInputError | None
) -> int:
    """The lines after the table: the sweep's outcome, where the files are; then a failed save or
    failed requests fail the command."""
    if results.sweep and sweep_line is not None:
        out.print(sweep_line)
        if results.sweep.get("saved"):
            out.print(escape(str(results.sweep["saved"])), soft_wrap=True)
    out.print(f"results: {out_dir}/ (results.json, report.md, chart.png, chart.svg)", soft_wrap=True)
    if save_error is not None:
        raise save_error
    raise_failures(results, out_dir)
    return 0
