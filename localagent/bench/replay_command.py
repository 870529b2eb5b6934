"""``localagent bench --replay SESSION``: which session, checked before anything starts, and what
the replay writes (its own report and chart next to results.json)."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from rich.markup import escape

from agent.sessions import SessionError, SessionStore
from localagent.bench import replay_report
from localagent.bench.formatting import fmt_speedup
from localagent.bench.outcome import SweepPlan, print_ending, print_wide, record_sweep
from localagent.bench.replay_chart import write_replay_chart
from localagent.bench.session_replay import read_session_file, replay_session
from localagent.console import out
from localagent.errors import UsageError
from server.bench.replay_plan import ReplaySession, ReplaySettings, ReplayWorkload
from server.bench.replay_runs import TargetRuns, summarize_runs
from server.bench.replay_summary import ReplaySummary, summarize_replay
from server.bench.results import BenchResults, TargetResult
from server.errors import BenchInputError

REPLAY_HELP = "replay the model requests of a saved session (an id, 'last' or a .jsonl file)"


def add_arguments(bench: argparse.ArgumentParser) -> None:
    bench.add_argument("--replay", metavar="SESSION", help=REPLAY_HELP)
    bench.add_argument(
        "--per-request",
        action="store_true",
        help="with --replay: also run each target after the first with the drafting the agent chooses per request",
    )
    bench.add_argument(
        "--temperature",
        type=_temperature,
        metavar="T",
        help="with --replay: the sampling temperature (default 0); 'session' keeps the session's own",
    )


KEEP_SESSION_TEMPERATURE = "session"
# Passes over the session per target, interleaved: one pass says little on a busy machine.
DEFAULT_REPLAY_RUNS = 3


def _temperature(text: str) -> float | str:
    if text == KEEP_SESSION_TEMPERATURE:
        return text
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number (or 'session')") from None
    if not 0 <= value <= 2:
        raise argparse.ArgumentTypeError(f"{text}: give a value from 0 to 2")
    return value


def check_arguments(args: argparse.Namespace) -> None:
    """Options that mean nothing for a replay are refused, not silently ignored."""
    if args.replay is None:
        if args.per_request:
            raise UsageError("--per-request goes with --replay (it measures the agent's choices on a session)")
        if args.temperature is not None:
            raise UsageError("--temperature goes with --replay (the recipe prompts use the recipe's sampling)")
        return
    if args.prompts is not None:
        raise UsageError("--replay sends the session's own requests; it does not take --prompts")
    if args.per_request and args.sweep:
        raise UsageError("--per-request compares fixed settings with the agent's; --sweep tries fixed settings only")
    if args.per_request and len(args.profiles or []) + len(args.base_url or []) < 2:
        raise UsageError("--per-request needs a baseline and a target to compare, e.g. --profiles tiny-baseline tiny")


def replay_workload(args: argparse.Namespace, store: SessionStore) -> ReplayWorkload:
    session = load_session(args.replay, store)
    temperature = None if args.temperature == KEEP_SESSION_TEMPERATURE else float(args.temperature or 0.0)
    settings = ReplaySettings(temperature=temperature, max_tokens=args.max_tokens, seed=args.seed)
    return ReplayWorkload(session, settings)


def load_session(given: str, store: SessionStore) -> ReplaySession:
    """A file when ``given`` names one (or looks like a path), otherwise a saved session's id.
    Whatever is wrong with it is bad input: one line, exit code 2, before any server starts."""
    path = Path(given).expanduser()
    try:
        if path.suffix == ".jsonl" or "/" in given or path.exists():
            loaded = read_session_file(path)
            return replay_session(loaded, _printable(path.name.removesuffix(".jsonl")), str(path))
        loaded = store.open(given)
        session_id = _printable(str(loaded.header.get("session_id", given)))
        return replay_session(loaded, session_id, str(store.directory / f"{session_id}.jsonl"))
    except SessionError as exc:
        raise UsageError(f"--replay {given}: {exc}") from None


def _printable(name: str) -> str:
    """A name as it may reach a terminal: no escape sequences or other control characters."""
    return "".join(ch if ch.isprintable() else "?" for ch in name)


def write_outputs(
    out_dir: Path,
    results: BenchResults,
    workload: ReplayWorkload,
    summary: ReplaySummary,
    spreads: list[TargetRuns] | None = None,
    runs: list[list[TargetResult]] | None = None,
) -> None:
    data: dict[str, Any] = {"results": results.to_json(), "replay_summary": asdict(summary)}
    if spreads is not None and runs is not None:
        data["replay_runs"] = {
            "runs": len(runs),
            "order": "interleaved: the targets as given, then reversed, run by run",
            "targets": [replay_report.spread_json(spread) for spread in spreads],
            "per_run": [[target.to_json() for target in run] for run in runs[1:]],
        }
    (out_dir / "results.json").write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    markdown = replay_report.render_markdown(results, workload, summary)
    if spreads is not None and runs is not None and len(runs) > 1:
        markdown += replay_report.runs_markdown(spreads, len(runs))
    (out_dir / "report.md").write_text(markdown)
    title = f"replay of {summary.session}: {' vs '.join(summary.targets)}"
    if results.sweep:
        title = f"--sweep {results.sweep.get('base')} on a replay of {summary.session}"
    elif len(title) > 90:
        title = f"replay of {summary.session}: {len(summary.targets)} targets"
    write_replay_chart(summary, out_dir / replay_report.CHART_PNG, out_dir / replay_report.CHART_SVG, title)


def finish_replay(
    args: argparse.Namespace,
    sweep_plan: SweepPlan | None,
    workload: ReplayWorkload,
    results: BenchResults,
    out_dir: Path,
    config_file: Path,
    runs: list[list[TargetResult]] | None = None,
) -> int:
    summary = summarize_replay(workload.session, results.targets)
    spreads = summarize_runs([summarize_replay(workload.session, targets) for targets in runs or [results.targets]])
    save_error: BenchInputError | None = None
    if sweep_plan is not None:
        # On agent traffic the setting to keep is the one that spends the least model time on the session.
        best = min(
            (t for t in summary.totals if not t.requests_failed and t.model_seconds > 0),
            key=lambda t: t.model_seconds,
            default=None,
        )
        winner = next((v for v in sweep_plan.variants if best is not None and v.label == best.target), None)
        save_error = record_sweep(results, sweep_plan, winner, f"a replay of {summary.session}", args.save, config_file)
    write_outputs(out_dir, results, workload, summary, spreads, runs)
    print_wide(replay_report.terminal_table(summary))
    if runs is not None and len(runs) > 1:
        print_wide(replay_report.runs_table(spreads, len(runs)))
        for line in replay_report.runs_verdicts(spreads):
            out.print(escape(line), soft_wrap=True)
    return print_ending(results, out_dir, _sweep_line(results, summary) if results.sweep else None, save_error)


def _sweep_line(results: BenchResults, summary: ReplaySummary) -> str:
    assert results.sweep is not None
    label = results.sweep.get("best")
    totals = summary.total(str(label)) if label else None
    if totals is None:
        return "sweep: no setting completed every request of the session"
    return (
        f"fastest on this session: {escape(str(label))} ({totals.model_seconds:.2f} s of model time, "
        f"{fmt_speedup(totals.session_speedup)} the current settings)"
    )
