"""``localagent bench``: parse the command line, check every input before anything runs, run,
then write and print the results."""

from __future__ import annotations

import argparse
import asyncio
import json
import shlex
import sys
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime
from pathlib import Path

import httpx2
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from localagent.agent_setup import session_store
from localagent.bench import interleave_command, replay_command, report
from localagent.bench.chart import write_chart
from localagent.bench.formatting import fmt_speedup, fmt_tps
from localagent.bench.outcome import SweepPlan, print_ending, print_wide, record_sweep
from localagent.bench.url_targets import url_targets
from localagent.console import err, out
from localagent.context import AppContext
from localagent.errors import UsageError
from server.bench import sweep
from server.bench.client import probe
from server.bench.machine import machine_info
from server.bench.prompts import DEFAULT_PROMPTS, PROMPTS_FILE_HELP, BenchPrompt, load_prompts
from server.bench.replay_plan import ReplayWorkload
from server.bench.results import BenchResults, BenchSettings, RequestResult, TargetResult
from server.bench.runner import Target, run_targets, total_steps
from server.bench.summary import OVERALL, Summary, summarize
from server.bench.workload import PromptWorkload, Workload
from server.errors import BenchInputError
from server.manager import ServerManager
from server.profile_loading import get_profile
from server.profiles import Profile
from server.supervisor import RestartPolicy

DEFAULT_RUNS = 3
DEFAULT_MAX_TOKENS = 1200  # the recipe's budget
DEFAULT_SEED = 42

PROMPTS_FILE_HELP_WRAPPED = PROMPTS_FILE_HELP.replace(", or ", ",\nor ")
EPILOG = f"""\
Each profile in turn is started on a free port, sent one warm-up request, then the measured
runs, and stopped; --base-url servers are used as they are. The first target is the baseline
that speedups are measured against.

Prompts: by default the recipe's three coding prompts and a prose prompt (a blog post about
Mixture of Experts). A --prompts FILE is {PROMPTS_FILE_HELP_WRAPPED}.

Sampling: temperature 0.7, top-k 64, top-p 0.95, min-p 0, with a fixed seed (run k uses seed+k-1).

Output in --out DIR (default ./bench-results/<timestamp>/): results.json (every request),
report.md, chart.png and chart.svg.

--sweep tries a grid of speculative settings on one profile (draft models: n_max x p_min;
ngram-mod: ngram_n_min/ngram_n_max), {sweep.SWEEP_RUNS} run and {sweep.SWEEP_MAX_TOKENS} tokens per prompt unless given,
and reports the fastest; --save writes it into that profile in the user config.

examples:
  localagent bench --profiles tiny-baseline tiny
  localagent bench --profiles gemma4-31b gemma4-31b-dflash
  localagent bench --base-url base=http://127.0.0.1:8910 dflash=http://127.0.0.1:8911
  localagent bench --sweep --profiles tiny --save
  localagent bench --profiles tiny --load 2   # two busy neighbour processes beside the server
  localagent bench --replay examples/bench/sessions/scripted-build.jsonl --profiles tiny-baseline tiny
  localagent bench --replay last --sweep --profiles tiny   # tune speculation on agent traffic

--replay sends a saved session's model requests (its messages, tools and sampling, temperature 0
unless --temperature) in order on each profile, and reports the session's model time, prefill and
cache figures, tok/s and acceptance, overall and by prompt length.
"""


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    bench = commands.add_parser(
        "bench",
        help="benchmark profiles or running servers: tok/s, speedup, acceptance; table, JSON, report, chart",
        description="Benchmark llama-server profiles (or running servers) on the same prompts and sampling.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    bench.add_argument("--profiles", nargs="+", metavar="PROFILE", help="profiles to start and measure, in order")
    bench.add_argument(
        "--base-url",
        nargs="+",
        action="extend",
        metavar="[NAME=]URL",
        help="running OpenAI-compatible servers to measure as they are, labelled NAME or by URL",
    )
    bench.add_argument("--prompts", type=Path, metavar="FILE", help="prompts to send instead of the default four")
    bench.add_argument("--runs", type=int, metavar="N", help=f"measured runs per prompt (default {DEFAULT_RUNS})")
    bench.add_argument(
        "--max-tokens", type=int, metavar="N", help=f"tokens per answer at most (default {DEFAULT_MAX_TOKENS})"
    )
    bench.add_argument(
        "--load",
        type=int,
        default=0,
        metavar="N",
        help="run N CPU-bound neighbour processes from before each server starts until its measured runs end",
    )
    bench.add_argument("--seed", type=int, default=DEFAULT_SEED, metavar="N", help=f"(default {DEFAULT_SEED})")
    bench.add_argument("--out", type=Path, metavar="DIR", help="where to write the results")
    bench.add_argument("--sweep", action="store_true", help="try a grid of speculative settings on one profile")
    bench.add_argument(
        "--grid", nargs="+", metavar="KEY=V1,V2", help="with --sweep: your own grid, e.g. n_max=4,8 p_min=0,0.5"
    )
    bench.add_argument(
        "--save", action="store_true", help="with --sweep: write the fastest settings to the user config"
    )
    replay_command.add_arguments(bench)
    interleave_command.add_arguments(bench)
    bench.set_defaults(handler=cmd_bench)


@dataclass
class _Plan:
    targets: list[Target]
    prompts: tuple[BenchPrompt, ...]
    settings: BenchSettings
    workload: Workload
    out_dir: Path
    ctx: AppContext
    manager: ServerManager | None = None
    sweep: SweepPlan | None = None
    extra_profiles: dict[str, Profile] = field(default_factory=dict)


def cmd_bench(args: argparse.Namespace) -> int:
    if args.interleave:
        return interleave_command.cmd_interleave(args)
    plan = _prepare(args)
    started_at = _now()
    results = BenchResults(
        started_at=started_at,
        finished_at=None,
        command_line=shlex.join(["localagent", *sys.argv[1:]]),
        machine=machine_info(),
        settings=plan.settings,
        prompts=list(plan.prompts),
        targets=[],
    )
    if plan.manager is not None:
        found = plan.manager.binary()
        results.binary = str(found.path)
        results.binary_version = plan.manager.capabilities(found.path).version

    if isinstance(plan.workload, ReplayWorkload):
        runs = _replay_runs(plan)
        results.targets = runs[0]
        results.finished_at = _now()
        return replay_command.finish_replay(
            args, plan.sweep, plan.workload, results, plan.out_dir, plan.ctx.paths.user_config_file, runs
        )
    results.targets = _run_with_progress(plan)
    results.finished_at = _now()
    summary = summarize(results.targets, [p.name for p in plan.prompts])

    save_error: BenchInputError | None = None
    if args.sweep:
        save_error = _finish_sweep(args, plan, results, summary)
    _write_outputs(plan.out_dir, results, summary)

    print_wide(report.terminal_table(summary))
    if any(cell.tps_source == "client" for cell in summary.cells):
        out.print(report.CLIENT_RATE_NOTE.removeprefix("\\"), soft_wrap=True)
    out.print(report.overhead_line(summary))
    return print_ending(results, plan.out_dir, _sweep_line(results, summary) if results.sweep else None, save_error)


# -- checking the input -----------------------------------------------------------------------------


# long: every check of the command line and the profiles, in one pass, before any server starts.
def _prepare(args: argparse.Namespace) -> _Plan:
    if args.runs is not None and args.runs < 1:
        raise UsageError("--runs must be at least 1")
    if args.max_tokens is not None and args.max_tokens < 1:
        raise UsageError("--max-tokens must be at least 1")
    if (args.grid or args.save) and not args.sweep:
        raise UsageError(f"{'--grid' if args.grid else '--save'} goes with --sweep")
    replay_command.check_arguments(args)
    prompts = load_prompts(args.prompts) if args.prompts is not None else DEFAULT_PROMPTS
    if args.replay is not None:
        runs = args.runs or (1 if args.sweep else replay_command.DEFAULT_REPLAY_RUNS)
    else:
        runs = args.runs or (sweep.SWEEP_RUNS if args.sweep else DEFAULT_RUNS)
    max_tokens = args.max_tokens or (sweep.SWEEP_MAX_TOKENS if args.sweep else DEFAULT_MAX_TOKENS)
    if not 0 <= args.load <= 256:
        raise UsageError(f"--load {args.load}: give a number of neighbour processes from 0 to 256")
    settings = BenchSettings(runs=runs, max_tokens=max_tokens, seed=args.seed, load=args.load)
    ctx = AppContext.load()
    out_dir = _out_dir(args.out)
    workload: Workload = PromptWorkload(prompts, settings)
    if args.replay is not None:
        workload = replay_command.replay_workload(args, session_store(ctx))
        prompts = ()
    plan = _Plan(targets=[], prompts=prompts, settings=settings, workload=workload, out_dir=out_dir, ctx=ctx)

    if args.sweep:
        _prepare_sweep(args, plan)
    else:
        names = args.profiles or ([] if args.base_url else [ctx.settings.server.profile])
        for name in names:
            get_profile(ctx.profiles, name)  # unknown name: one line, before anything starts
        plan.targets = [Target(label=name, profile=name) for name in names]
        plan.targets += url_targets(args.base_url or [], ctx.settings.server.api_key)
        if args.per_request:
            plan.targets = _with_per_request(plan.targets, workload)
    labels = [t.label for t in plan.targets]
    duplicate = next((label for label in labels if labels.count(label) > 1), None)
    if duplicate is not None:
        raise UsageError(f"{duplicate!r} is listed twice; name URLs with NAME=URL to tell them apart")
    running = [t for t in plan.targets if t.endpoint is not None]
    if running:
        asyncio.run(_probe_all(running))  # an unreachable URL stops the bench before anything starts

    if any(t.profile for t in plan.targets):
        manager = ctx.server_manager()
        # A crashed server is a failed row, not a silent restart: a restarted server would be
        # measured cold and its /metrics counters would start again from zero.
        manager.restart_policy = RestartPolicy(max_restarts=0)
        manager.profiles.update(plan.extra_profiles)  # the sweep's variants, under generated names
        planned: list[Target] = []
        for target in plan.targets:
            assert target.profile is not None or target.endpoint is not None
            if target.profile is not None:
                # Missing binary, unsupported flag, bad model path: known now, not after an hour.
                _profile, launch, _models = manager.plan(target.profile, fetch=False)
                target = replace(target, notes=tuple(launch.notes))
            planned.append(target)
        plan.targets = planned
        plan.manager = manager
    _make_out_dir(out_dir)
    return plan


def _with_per_request(targets: list[Target], workload: Workload) -> list[Target]:
    """After each target but the first (the baseline), the same server with the drafting the
    agent would choose per request."""
    from localagent.bench.policy_replay import PER_REQUEST_SUFFIX, PolicyReplay

    assert isinstance(workload, ReplayWorkload)
    out = list(targets[:1])
    for target in targets[1:]:
        out += [target, replace(target, label=target.label + PER_REQUEST_SUFFIX, workload=PolicyReplay(workload))]
    return out


def _prepare_sweep(args: argparse.Namespace, plan: _Plan) -> None:
    if args.base_url:
        raise UsageError("--sweep starts its own servers; it does not take --base-url")
    names = args.profiles or [plan.ctx.settings.server.profile]
    if len(names) != 1:
        raise UsageError("--sweep tunes one profile at a time; give one with --profiles NAME")
    profile = get_profile(plan.ctx.profiles, names[0])
    sweep.check_sweepable(profile)
    spec_type = profile.speculative.type
    grid = sweep.parse_grid(args.grid, spec_type) if args.grid else sweep.default_grid(spec_type)
    variants, profiles = sweep.build_variants(profile, grid)
    plan.extra_profiles = profiles
    plan.sweep = SweepPlan(profile.name, list(grid), variants)
    plan.targets = [Target(label=v.label, profile=v.name, settings=v.changes) for v in variants]


async def _probe_all(targets: list[Target]) -> None:
    async with httpx2.AsyncClient() as client:
        for target in targets:
            assert target.endpoint is not None
            reason = await probe(client, target.endpoint)
            if reason is not None:
                raise UsageError(f"cannot reach {target.endpoint.base_url} ({reason}); is the server running?")


def _out_dir(given: Path | None) -> Path:
    if given is not None:
        return given
    return Path.cwd() / "bench-results" / datetime.now().strftime("%Y%m%d-%H%M%S")


def _make_out_dir(path: Path) -> None:
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"--out {path}: cannot create it ({exc.strerror})") from None


# -- running ----------------------------------------------------------------------------------------


class _ProgressObserver:
    def __init__(self, progress: Progress, task: object) -> None:
        self.progress = progress
        self.task = task

    def status(self, text: str) -> None:
        self.progress.update(self.task, description=escape(text))  # type: ignore[arg-type]  # rich's TaskID is an int at run time

    def advance(self, result: RequestResult | None, steps: int = 1) -> None:
        detail = ""
        if result is not None and not result.ok:
            detail = "[red]failed[/red]"
        elif result is not None and result.server_tps:
            detail = f"last {result.server_tps:.0f} tok/s"
            if result.acceptance is not None:
                detail += f", accept {result.acceptance * 100:.0f}%"
        self.progress.update(self.task, advance=steps, detail=detail)  # type: ignore[arg-type]  # rich's TaskID is an int at run time


def _replay_runs(plan: _Plan) -> list[list[TargetResult]]:
    """The replay ``runs`` times, the targets interleaved run by run (A B, B A, ...) so that drift
    in the machine's speed hits them alike; each run's results in the targets' given order."""
    from dataclasses import replace

    from server.bench.replay_runs import interleaved

    runs = []
    for run in range(plan.settings.runs):
        got = _run_with_progress(replace(plan, targets=interleaved(plan.targets, run)))
        by_label = {target.label: target for target in got}
        runs.append([by_label[target.label] for target in plan.targets])
    for target in plan.targets:
        if getattr(target.workload, "ignored", False):
            err.print(
                f"note: {escape(target.label)}: the server drafted on requests sent with speculative.n_max 0; it "
                "does not honour per-request settings, so this row measures its fixed settings",
                soft_wrap=True,
            )
    return runs


def _run_with_progress(plan: _Plan) -> list[TargetResult]:
    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[detail]}"),
        console=err,
        transient=True,
        refresh_per_second=4,
    ) as progress:
        task = progress.add_task("bench", total=total_steps(plan.targets, plan.workload), detail="")
        observer = _ProgressObserver(progress, task)
        return asyncio.run(
            run_targets(
                plan.targets, plan.workload, plan.settings, plan.manager, observer, plan.ctx.settings.server.api_key
            )
        )


# -- sweep results and files ------------------------------------------------------------------------


def _finish_sweep(
    args: argparse.Namespace, plan: _Plan, results: BenchResults, summary: Summary
) -> BenchInputError | None:
    assert plan.sweep is not None
    best = sweep.fastest(summary, plan.sweep.variants)
    return record_sweep(results, plan.sweep, best, "the recipe prompts", args.save, plan.ctx.paths.user_config_file)


def _sweep_line(results: BenchResults, summary: Summary) -> str:
    assert results.sweep is not None
    best = results.sweep.get("best")
    if best is None:
        return "sweep: no setting completed all its requests"
    cell = summary.cell(str(best), OVERALL)
    tps = fmt_tps(cell.server_tps if cell else None)
    gain = fmt_speedup(cell.speedup if cell else None)
    return f"fastest on this machine: {escape(str(best))} ({tps} tok/s, {gain} the current settings)"


def _write_outputs(out_dir: Path, results: BenchResults, summary: Summary) -> None:
    data = {"results": results.to_json(), "summary": asdict(summary)}
    (out_dir / "results.json").write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    (out_dir / "report.md").write_text(report.render_markdown(results, summary))
    title = f"localagent bench: {' vs '.join(summary.targets)}"
    if results.sweep:
        title = f"localagent bench --sweep {results.sweep.get('base')}"
    elif len(summary.targets) > 3 or len(title) > 90:
        title = f"localagent bench: {len(summary.targets)} targets"
    write_chart(summary, out_dir / report.CHART_PNG, out_dir / report.CHART_SVG, title)


def _now() -> str:
    return datetime.now().astimezone().isoformat(timespec="seconds")
