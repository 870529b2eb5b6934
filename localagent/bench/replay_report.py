"""A replay as people read it: the terminal table and report.md.

The report leads with what a replay is and is not: it sends the session's recorded history, so
every request is the one the session made, not one the profile's own earlier answers would
have led to. Then the session-level figures (the model's time over the whole session, and the
session's time with its tools' recorded time added) next to the token-level one (generation
tok/s), and the same speed and acceptance by prompt length.
"""

from __future__ import annotations

from rich.markup import escape
from rich.table import Table

from localagent.bench import report
from localagent.bench.formatting import fmt_count, fmt_pct, fmt_seconds, fmt_speedup, fmt_tps
from server.bench.replay_plan import ReplayWorkload
from server.bench.replay_runs import Spread, TargetRuns
from server.bench.replay_summary import ReplaySummary, ReplayTotals
from server.bench.results import BenchResults

CHART_PNG = "chart.png"
CHART_SVG = "chart.svg"

REPLAY_CAVEAT = (
    "A replay sends the session's recorded history: each request carries the messages, tools and sampling the "
    "session sent, in the session's order, on one server, so the prompt cache serves the same prefixes it did. "
    "The answers generated now are measured and then dropped, never fed back; each is allowed the length of the "
    "recorded answer. So this measures the model's side of *this* session's traffic, not what a new session on "
    "the profile would have done."
)


def terminal_table(summary: ReplaySummary) -> Table:
    # A file's name and the profiles' names are text, not markup.
    title = f"replay of {escape(summary.session)}: {summary.common} of {summary.requests} requests on every target"
    table = Table(title=title, title_justify="left")
    table.add_column("target", overflow="fold")
    for name in ("model s", "session×", "with tools×", "tok/s", "token×", "prefill s", "cached", "accept", "failed"):
        table.add_column(name, justify="right", no_wrap=True)
    for totals in summary.totals:
        table.add_row(
            escape(totals.target),
            fmt_seconds(totals.model_seconds),
            fmt_speedup(totals.session_speedup),
            fmt_speedup(totals.wall_speedup),
            fmt_tps(totals.tps),
            fmt_speedup(totals.token_speedup),
            fmt_seconds(totals.prompt_seconds),
            fmt_pct(totals.cached_share),
            fmt_pct(totals.acceptance),
            str(totals.requests_failed),
        )
    return table


def render_markdown(results: BenchResults, workload: ReplayWorkload, summary: ReplaySummary) -> str:
    session = workload.session
    lines = [
        f"# localagent bench --replay {report.md(session.name)}: {' vs '.join(map(report.md, summary.targets))}",
        "",
        f"Run {results.started_at} on {report.machine_short(results)}.",
        "",
        f"Command: `{results.command_line}`",
        "",
        f"> {REPLAY_CAVEAT}",
        "",
        *_session_section(workload, summary),
        *_totals_section(summary),
        *_reading_section(summary),
        *_bins_section(summary),
        *report.speculation_section(results.targets),
        *report.sweep_section(results),
        *report.failures_section(results),
        *_requests_section(results, workload),
        *report.servers_section(results),
        *report.machine_section(results),
    ]
    return "\n".join(lines)


def _session_section(workload: ReplayWorkload, summary: ReplaySummary) -> list[str]:
    session, settings = workload.session, workload.settings
    temperature = "the session's own" if settings.temperature is None else f"{settings.temperature:g}"
    cap = f", at most {settings.max_tokens} tokens each" if settings.max_tokens else ""
    lines = [
        "## The session",
        "",
        (
            f"- `{report.md(session.source)}`: {len(session.requests)} model requests over {session.turns} "
            f"turn{'s' if session.turns != 1 else ''}, recorded against `{report.md(session.model or 'unknown')}`"
        ),
        (
            f"- its tools ran for {summary.tool_seconds:.2f} s in all (the same on every profile; counted in "
            "**with tools×**)"
        ),
        f"- its model requests took {fmt_seconds(session.recorded_model_seconds)} s when it ran",
        f"- replayed at temperature {temperature}, seed {settings.seed}, each answer as long as the recorded one{cap}",
        "- compaction's own summary requests are not recorded, so they are not replayed",
    ]
    lines.extend(f"- note: {report.md(note)}" for note in session.notes)
    lines.append("")
    return lines


def _totals_section(summary: ReplaySummary) -> list[str]:
    base = summary.targets[0] if summary.targets else "-"
    lines = [
        "## Per target",
        "",
        (
            f"Over the {summary.common} of {summary.requests} requests that every target completed. **model s**: "
            "request sent to answer complete, summed; **session×**: model time against "
            f"**{report.md(base)}**; **with tools×**: the same with the tools' recorded time added to both; "
            "**tok/s**: generated tokens over generation time (pooled); **token×**: that against the first target; "
            "**prefill**: prompt tokens the server had to read (the rest came from its cache) and the time it took."
        ),
        "",
        (
            "| target | model s | session× | with tools× | tok/s | token× | prompt tokens | cached | prefill tokens | "
            "prefill s | prefill tok/s | generated | drafted | accepted | accept | failed |"
        ),
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    lines.extend(_totals_row(t) for t in summary.totals)
    lines.append("")
    return lines


def _totals_row(t: ReplayTotals) -> str:
    cells = [
        report.md(t.target),
        fmt_seconds(t.model_seconds),
        fmt_speedup(t.session_speedup),
        fmt_speedup(t.wall_speedup),
        fmt_tps(t.tps),
        fmt_speedup(t.token_speedup),
        fmt_count(t.prompt_tokens),
        f"{fmt_count(t.cached_tokens)} ({fmt_pct(t.cached_share)})",
        fmt_count(t.processed_tokens),
        fmt_seconds(t.prompt_seconds),
        fmt_tps(t.prefill_tps),
        fmt_count(t.generated_tokens),
        fmt_count(t.drafted),
        fmt_count(t.accepted),
        fmt_pct(t.acceptance),
        str(t.requests_failed),
    ]
    return "| " + " | ".join(cells) + " |"


def _reading_section(summary: ReplaySummary) -> list[str]:
    """The two speedups in words, for each target after the first."""
    if len(summary.totals) < 2:
        return []
    base = report.md(summary.totals[0].target)
    lines = [
        "## Reading the two speedups",
        "",
        (
            "**token×** is what speculation does to generation. **session×** is what the session feels: it also "
            "holds prefill (the new part of each prompt) and the wait before each answer's first token, which "
            "speculation does not shorten, so with short answers and long prompts it stays nearer 1× than "
            "token× does. **with tools×** adds the tools' own time to both sides: the closest this replay gets "
            "to the wall-clock time of a person's session."
        ),
        "",
    ]
    for t in summary.totals[1:]:
        name = report.md(t.target)
        if not t.same_model:
            lines.append(
                f"- **{name}** serves another model than **{base}** (`{report.md(t.model or '?')}`): its "
                "speedups compare two models, not speculation; compare it with its own baseline profile"
            )
            continue
        lines.append(
            f"- **{name}**: generation at {fmt_speedup(t.token_speedup)} the speed of **{base}**; the session's "
            f"model time {fmt_speedup(t.session_speedup)}, and {fmt_speedup(t.wall_speedup)} with the tools' time"
        )
        noise = _prefill_noise(summary.totals[0], t)
        if noise is not None:
            lines.append(
                f"  - prefill is the same work on both (the same model and prompts), yet its speed differs by "
                f"{noise * 100:.0f}% here: that much of the difference is this machine's noise during the run"
            )
    lines.append("")
    return lines


# Prefill speeds of one model this far apart are noise worth saying (speculation does not touch prefill).
PREFILL_NOISE = 0.10


def _prefill_noise(base: ReplayTotals, other: ReplayTotals) -> float | None:
    if not (base.prefill_tps and other.prefill_tps):
        return None
    spread = abs(other.prefill_tps / base.prefill_tps - 1)
    return spread if spread > PREFILL_NOISE else None


def _bins_section(summary: ReplaySummary) -> list[str]:
    head = " | ".join(f"{report.md(t)} tok/s | {report.md(t)} accept" for t in summary.targets)
    lines = [
        "## By prompt length",
        "",
        (
            "Requests binned by their prompt's length in tokens, as each server counted it; tok/s and acceptance "
            "pooled within a bin. Where speculation pays shows as the acceptance and tok/s holding up (or not) as "
            "the context grows."
        ),
        "",
        f"| prompt tokens | requests | {head} |",
        "|---|---:|" + "---:|---:|" * len(summary.targets),
    ]
    for length_bin in summary.bins:
        cells = [length_bin.cell(t) for t in summary.targets]
        count = max((c.requests for c in cells if c is not None), default=0)
        values = " | ".join(f"{fmt_tps(c.tps if c else None)} | {fmt_pct(c.acceptance if c else None)}" for c in cells)
        lines.append(f"| {length_bin.label} | {count} | {values} |")
    lines.extend(["", f"![tok/s and acceptance by prompt length]({CHART_PNG})", ""])
    return lines


def _requests_section(results: BenchResults, workload: ReplayWorkload) -> list[str]:
    recorded = {r.name: r for r in workload.session.requests}
    lines = [
        "## Every request",
        "",
        "<details><summary>per request: prompt and cache, speeds, drafts, and what the session recorded</summary>",
        "",
        "| target | request | turn | prompt tokens | cached | tokens | recorded tokens | tok/s | model s | accept |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for target in results.targets:
        for r in target.requests:
            turn = recorded[r.prompt].turn if r.prompt in recorded else "-"
            want = recorded[r.prompt].recorded.completion_tokens if r.prompt in recorded else None
            if not r.ok:
                lines.append(
                    f"| {report.md(target.label)} | {r.prompt} | {turn} | failed: {report.md(r.error or '')} |"
                    + " |" * 6
                )
                continue
            lines.append(
                f"| {report.md(target.label)} | {r.prompt} | {turn} | {fmt_count(r.prompt_tokens)} | "
                f"{fmt_count(r.cached_tokens)} | {fmt_count(r.completion_tokens)} | {fmt_count(want)} | "
                f"{fmt_tps(r.server_tps)} | {fmt_seconds(r.wall_s)} | {fmt_pct(r.acceptance)} |"
            )
    lines.extend(["", "</details>", ""])
    return lines


# -- runs ---------------------------------------------------------------------------------------------


def _spread_text(spread: Spread | None) -> str:
    if spread is None:
        return "-"
    if len(spread.values) == 1:
        return fmt_speedup(spread.median)
    return f"{fmt_speedup(spread.median)} [{spread.low:.2f}–{spread.high:.2f}]"


def runs_table(spreads: list[TargetRuns], runs: int) -> Table:
    table = Table(title=f"over {runs} runs (interleaved): median [lowest–highest]", title_justify="left")
    table.add_column("target", overflow="fold")
    for name in ("model s", "session×", "token×"):
        table.add_column(name, justify="right", no_wrap=True)
    for spread in spreads:
        seconds = spread.model_seconds
        table.add_row(
            escape(spread.target),
            f"{fmt_seconds(seconds.median)} [{seconds.low:.2f}–{seconds.high:.2f}]",
            _spread_text(spread.session),
            _spread_text(spread.token),
        )
    return table


def runs_verdicts(spreads: list[TargetRuns]) -> list[str]:
    """One line per target whose runs disagree more than its median differs from 1×."""
    lines = []
    for spread in spreads:
        if not spread.inconclusive or spread.session is None:
            continue
        session = spread.session
        said = (
            f"{spread.target}: the runs spread ({session.low:.2f}–{session.high:.2f}×) wider than the "
            f"difference from the baseline ({session.median:.2f}×): "
        )
        if spread.all_one_side:
            faster = "faster" if session.low > 1.0 else "slower"
            lines.append(said + f"all {len(session.values)} runs were {faster}, but by how much this replay cannot say")
        else:
            lines.append(said + "this replay cannot say which is faster")
    return lines


def spread_json(spread: TargetRuns) -> dict:
    def one(s: Spread | None) -> dict | None:
        return None if s is None else {"median": s.median, "low": s.low, "high": s.high, "values": list(s.values)}

    return {
        "target": spread.target,
        "session_speedup": one(spread.session),
        "token_speedup": one(spread.token),
        "model_seconds": one(spread.model_seconds),
        "inconclusive": spread.inconclusive,
        "all_runs_one_side": spread.all_one_side,
    }


def runs_markdown(spreads: list[TargetRuns], runs: int) -> str:
    lines = [
        "",
        f"## Over {runs} runs",
        "",
        "The targets ran interleaved (as listed, then reversed, run by run), each run measured against the "
        "first target on its own. The table above is the first run; these are the median and the lowest "
        "and highest over the runs.",
        "",
        "| target | model s | session× | token× |",
        "|---|---:|---:|---:|",
    ]
    for spread in spreads:
        seconds = spread.model_seconds
        lines.append(
            f"| {report.md(spread.target)} | {seconds.median:.2f} [{seconds.low:.2f}–{seconds.high:.2f}] "
            f"| {_spread_text(spread.session)} | {_spread_text(spread.token)} |"
        )
    verdicts = runs_verdicts(spreads)
    if verdicts:
        lines += ["", *[f"- {report.md(line)}" for line in verdicts]]
    return "\n".join(lines) + "\n"
