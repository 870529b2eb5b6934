"""The benchmark as people read it: a rich table for the terminal and a Markdown report."""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Table

from localagent.bench.formatting import fmt_count, fmt_pct, fmt_ratio, fmt_seconds, fmt_speedup, fmt_tps
from server.bench.results import BenchResults, TargetResult
from server.bench.summary import OVERALL, Cell, Summary

CHART_PNG = "chart.png"
CHART_SVG = "chart.svg"
# vLLM and SGLang send no per-request timings: their rate is what arrived over the stream.
CLIENT_RATE_NOTE = (
    "\\* measured by this client over the stream: this server sends no timings of its own (vLLM and SGLang "
    "do not), so its tok/s includes the cost of streaming, which llama-server's own figure leaves out (the "
    "runtime overhead section measures that cost where a server sends both)."
)
POSITIONS_SHOWN = 8  # acceptance by draft position: the first few say enough


def terminal_table(summary: Summary, title: str | None = None) -> Table:
    table = Table(title=title, title_justify="left")
    table.add_column("prompt", overflow="fold")
    table.add_column("target", overflow="fold")
    for name in ("tok/s", "client", "speedup", "accept", "gen s", "tokens", "runs"):
        table.add_column(name, justify="right", no_wrap=True)
    for prompt in [*summary.prompts, OVERALL]:
        if prompt == OVERALL:
            table.add_section()
        for i, target in enumerate(summary.targets):
            cell = summary.cell(target, prompt)
            if cell is None:
                continue
            label = prompt if i == 0 else ""
            style = "bold" if prompt == OVERALL else None
            table.add_row(label, target, *_cell_columns(cell), style=style)
    return table


def _cell_columns(cell: Cell) -> list[str]:
    runs = f"{cell.runs_ok}" if not cell.runs_failed else f"{cell.runs_ok} ({cell.runs_failed} failed)"
    rate = fmt_tps(cell.server_tps) + ("*" if cell.tps_source == "client" and cell.server_tps is not None else "")
    return [
        rate,
        fmt_tps(cell.client_tps),
        fmt_speedup(cell.speedup),
        fmt_pct(cell.acceptance),
        fmt_seconds(cell.gen_seconds),
        fmt_count(cell.completion_tokens),
        runs,
    ]


def overhead_line(summary: Summary) -> str:
    if summary.overhead_ratio is None:
        measured = [cell for cell in summary.cells if cell.runs_ok]
        if measured and all(cell.tps_source == "client" for cell in measured):
            return "runtime overhead: not measured (the servers send no timings of their own to compare with)"
        return "runtime overhead: not measured (no successful streamed request)"
    verdict = "met" if summary.overhead_ok else "NOT met"
    return (
        f"runtime overhead: client tok/s ÷ server tok/s = {fmt_ratio(summary.overhead_ratio)} "
        f"(median; goal ≥ {summary.overhead_goal:.2f}: {verdict})"
    )


def render_markdown(results: BenchResults, summary: Summary) -> str:
    lines = [
        f"# localagent bench: {' vs '.join(summary.targets)}",
        "",
        f"Run {results.started_at} on {machine_short(results)}.",
        "",
        f"Command: `{results.command_line}`",
        "",
        *_results_section(results, summary),
        *_overhead_section(summary),
        *speculation_section(results.targets),
        *sweep_section(results),
        *failures_section(results),
        *_requests_section(results.targets),
        *servers_section(results),
        *machine_section(results),
        *_prompts_section(results),
    ]
    return "\n".join(lines)


def _results_section(results: BenchResults, summary: Summary) -> list[str]:
    settings = results.settings
    sampling = settings.sampling
    load = (
        f"**Load:** {settings.load} CPU-bound neighbour process{'es' if settings.load != 1 else ''} "
        "ran beside the server from before it started until its measured runs ended. "
        if settings.load
        else "No other load was added. "
    )
    lines = [
        "## Results",
        "",
        (
            f"Medians over {settings.runs} run{'s' if settings.runs != 1 else ''} per prompt, at most "
            f"{settings.max_tokens} tokens per answer, one warm-up request per server first. Sampling: temperature "
            f"{sampling.temperature}, top-k {sampling.top_k}, top-p {sampling.top_p}, min-p {sampling.min_p}, "
            f"seed {settings.seed} (run k uses seed {settings.seed}+k−1). "
            + load
            + f"**tok/s** is the server's own generation speed (`timings.predicted_per_second`); **client tok/s** is "
            f"what this client saw arrive over the stream; **speedup** compares server tok/s with "
            f"**{summary.targets[0] if summary.targets else '-'}** on the same prompt; **accept** is accepted ÷ "
            "drafted tokens (`-` = nothing drafted); **overall** is the median over every request."
        ),
        "",
        "| prompt | target | tok/s | client tok/s | speedup | accept | gen s | tokens | runs |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for prompt in [*summary.prompts, OVERALL]:
        for target in summary.targets:
            cell = summary.cell(target, prompt)
            if cell is None:
                continue
            name = f"**{prompt}**" if prompt == OVERALL else prompt
            lines.append(f"| {name} | {md(target)} | " + " | ".join(_cell_columns(cell)) + " |")
    if any(cell.tps_source == "client" for cell in summary.cells):
        lines.extend(["", CLIENT_RATE_NOTE])
    lines.extend(["", f"![tok/s by prompt and target, acceptance marked]({CHART_PNG})", ""])
    return lines


def _overhead_section(summary: Summary) -> list[str]:
    lines = [
        "## Runtime overhead",
        "",
        (
            "Client-observed tok/s divided by server tok/s, per request, counted fairly: the tokens generated "
            "between the arrival of the first content chunk and the arrival of the last, over that window as "
            "timed here and as timed by the server (every streamed chunk carries the server's cumulative "
            "`predicted_n` and `predicted_ms`). What is left is the cost of streaming, parsing and the client "
            "itself; 1.000 means none."
        ),
        "",
        f"**{overhead_line(summary).removeprefix('runtime overhead: ')}**",
        "",
        "| target | median ratio |",
        "|---|---:|",
    ]
    for target in summary.targets:
        cell = summary.cell(target, OVERALL)
        lines.append(f"| {md(target)} | {fmt_ratio(cell.overhead_ratio if cell else None)} |")
    lines.append("")
    return lines


def _prompts_section(results: BenchResults) -> list[str]:
    lines = ["## Prompts", ""]
    for i, item in enumerate(results.prompts, start=1):
        lines.append(f"{i}. **{md(item.name)}** ({item.kind}): {md(one_line(item.text))}")
    lines.extend(
        ["", "Every request, with its raw figures, is in `results.json`; the chart is also in `chart.svg`.", ""]
    )
    return lines


def speculation_section(targets: Sequence[TargetResult]) -> list[str]:
    measured = [t for t in targets if t.metrics is not None]
    if not measured:
        return []
    lines = [
        "## Speculative decoding (server /metrics over the measured runs)",
        "",
        (
            "Mean accepted length = 1 + accepted ÷ verification steps: tokens gained per step of the main model. "
            f"Acceptance by position: the share of steps that accepted draft token 1, 2, … (first {POSITIONS_SHOWN})."
        ),
        "",
        "| target | tokens | drafted | accepted | acceptance | mean accepted length | acceptance by position |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for target in measured:
        m = target.metrics
        assert m is not None
        positions = " ".join(fmt_pct(p) for p in m.acceptance_by_position[:POSITIONS_SHOWN]) or "-"
        mal = "-" if m.mean_accepted_length is None else f"{m.mean_accepted_length:.2f}"
        lines.append(
            f"| {md(target.label)} | {fmt_count(m.tokens_predicted)} | {fmt_count(m.draft_tokens)} | "
            f"{fmt_count(m.accepted_tokens)} | {fmt_pct(m.acceptance)} | {mal} | {positions} |"
        )
    lines.append("")
    return lines


def sweep_section(results: BenchResults) -> list[str]:
    sweep = results.sweep
    if not sweep:
        return []
    scored = f"; scored on {md(str(sweep['scored_on']))}" if sweep.get("scored_on") else ""
    lines = ["## Sweep", "", f"Base profile **{md(str(sweep.get('base')))}**; grid: `{sweep.get('grid')}`{scored}.", ""]
    best = sweep.get("best")
    if best:
        lines.append(f"Fastest on this machine: **{md(str(best))}** ({md(str(sweep.get('best_settings')))}).")
    else:
        lines.append("No setting completed its requests.")
    if sweep.get("saved"):
        lines.append("")
        lines.append(f"Saved: {md(str(sweep['saved']))}")
    lines.append("")
    return lines


def failures_section(results: BenchResults) -> list[str]:
    failed = results.failed_requests
    if not failed:
        return []
    lines = ["## Failed requests", "", "| target | prompt | run | error |", "|---|---|---:|---|"]
    for label, row in failed:
        lines.append(f"| {md(label)} | {md(row.prompt)} | {row.run} | {md(row.error or '')} |")
    lines.append("")
    return lines


def _requests_section(targets: Sequence[TargetResult]) -> list[str]:
    lines = [
        "## Every request",
        "",
        "<details><summary>per request: tokens, speeds, drafts</summary>",
        "",
        (
            "| target | prompt | run | prompt tokens | tokens | tok/s | client tok/s | gen s | drafted | accepted | "
            "accept | client ÷ server |"
        ),
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for target in targets:
        for r in target.requests:
            if not r.ok:
                lines.append(
                    f"| {md(target.label)} | {md(r.prompt)} | {r.run} | failed: {md(r.error or '')} |" + " |" * 8
                )
                continue
            lines.append(
                f"| {md(target.label)} | {md(r.prompt)} | {r.run} | {fmt_count(r.prompt_tokens)} | "
                f"{fmt_count(r.completion_tokens)} | {fmt_tps(r.server_tps)} | {fmt_tps(r.client_tps)} | "
                f"{fmt_seconds(r.gen_seconds)} | {fmt_count(r.draft_n)} | {fmt_count(r.draft_accepted)} | "
                f"{fmt_pct(r.acceptance)} | {fmt_ratio(r.overhead_ratio)} |"
            )
    lines.extend(["", "</details>", ""])
    return lines


def servers_section(results: BenchResults) -> list[str]:
    lines = ["## Servers", ""]
    for target in results.targets:
        lines.append(f"### {target.label}")
        lines.append("")
        if target.profile:
            lines.append(f"- profile `{target.profile}`, speculation: {target.speculative or 'none'}")
        if target.settings:
            lines.append("- swept settings: " + ", ".join(f"`{k} = {v}`" for k, v in target.settings.items()))
        if target.base_url and not target.profile:
            lines.append(f"- URL: {target.base_url}")
        if target.engine and target.engine != "unknown":
            lines.append(f"- engine: {md(target.engine)}")
        if target.model:
            lines.append(f"- model: `{target.model}`")
        if target.build_info:
            lines.append(f"- build: `{target.build_info}`")
        if target.error:
            lines.append(f"- **failed:** {md(target.error)}")
        for note in target.notes:
            lines.append(f"- note: {md(one_line(note))}")
        if target.command:
            lines.extend(["", "```", target.command, "```"])
        lines.append("")
    return lines


def machine_section(results: BenchResults) -> list[str]:
    m = results.machine
    cores = f"{m.cpu_count}" + (f" ({m.cpus_usable} usable)" if m.cpus_usable and m.cpus_usable != m.cpu_count else "")
    lines = [
        "## Machine",
        "",
        f"- platform: {m.platform} ({m.machine}), Python {m.python}",
        f"- CPU: {m.cpu_model or 'unknown'}, {cores} logical cores",
    ]
    if m.memory_gb:
        lines.append(f"- memory: {m.memory_gb:.0f} GiB")
    lines.append(f"- GPU: {', '.join(m.gpus) if m.gpus else 'none used or found'}")
    if results.binary:
        lines.append(f"- llama-server: `{results.binary}` (version {results.binary_version or 'unknown'})")
    lines.append("")
    return lines


def machine_short(results: BenchResults) -> str:
    m = results.machine
    gpu = f", {m.gpus[0]}" if m.gpus else ""
    cores = m.cpus_usable or m.cpu_count
    return f"{m.cpu_model or m.machine} ({cores} cores){gpu}"


def one_line(text: str) -> str:
    return " ".join(text.split())


def md(text: str) -> str:
    # Keep table cells in one piece.
    return text.replace("|", "\\|").replace("\n", " ")
