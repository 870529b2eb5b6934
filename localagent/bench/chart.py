"""The chart: server tok/s by prompt and target as grouped bars, acceptance marked on each bar."""

from __future__ import annotations

from pathlib import Path

from localagent.bench.summary import OVERALL, Summary

# Colour-blind-safe (Okabe-Ito); the first target, the baseline, is the neutral grey.
_COLOURS = ["#999999", "#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442"]


def write_chart(summary: Summary, png: Path, svg: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")  # files only: no display, no GUI toolkit
    import matplotlib.pyplot as plt

    # Same data, same SVG bytes: the sample report does not churn in version control.
    matplotlib.rcParams["svg.hashsalt"] = "localagent-bench"

    groups = [*summary.prompts, OVERALL]
    targets = summary.targets
    n = max(len(targets), 1)
    width = 0.8 / n
    fig_width = min(4.0 + 1.1 * len(groups) * max(n, 2) * 0.75, 16.0)
    fig, ax = plt.subplots(figsize=(fig_width, 5.2), dpi=120)
    acc_ax = ax.twinx()
    top = 0.0
    any_acceptance = False
    for t, target in enumerate(targets):
        colour = _COLOURS[t % len(_COLOURS)]
        xs: list[float] = []
        heights: list[float] = []
        acc_x: list[float] = []
        acc_y: list[float] = []
        for g, group in enumerate(groups):
            cell = summary.cell(target, group)
            x = g - 0.4 + width * (t + 0.5)
            if cell is None or cell.server_tps is None:
                ax.text(x, 0, "failed", rotation=90, ha="center", va="bottom", fontsize=8, color="#D55E00")
                continue
            xs.append(x)
            heights.append(cell.server_tps)
            top = max(top, cell.server_tps)
            label = f"{cell.server_tps:.0f}"
            if t > 0 and cell.speedup is not None:
                label += f"\n{cell.speedup:.2f}×"
            ax.annotate(label, (x, cell.server_tps), xytext=(0, 2), textcoords="offset points",
                        ha="center", va="bottom", fontsize=8)
            if cell.acceptance is not None:
                any_acceptance = True
                acc_x.append(x)
                acc_y.append(cell.acceptance * 100)
        ax.bar(xs, heights, width * 0.92, color=colour, label=target, edgecolor="white", linewidth=0.5)
        if acc_x:
            acc_ax.scatter(acc_x, acc_y, marker="D", s=28, color="black", edgecolor="white", linewidth=0.6, zorder=5)
            for x, y in zip(acc_x, acc_y):
                acc_ax.annotate(f"{y:.0f}%", (x, y), xytext=(0, -11), textcoords="offset points",
                                ha="center", va="top", fontsize=7, color="black",
                                bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none", "alpha": 0.8})
    ax.set_xticks(range(len(groups)), [g if g != OVERALL else "overall\n(median)" for g in groups])
    ax.set_ylabel("tokens/s (server, median over runs)")
    ax.set_ylim(0, top * 1.22 if top else 1)
    ax.set_xlim(-0.6, len(groups) - 0.4)
    ax.grid(axis="y", alpha=0.3)
    ax.set_axisbelow(True)
    if len(groups) > 1:
        ax.axvline(len(groups) - 1.5, color="#cccccc", linewidth=0.8)
    acc_ax.set_ylim(0, 118)
    acc_ax.set_yticks(range(0, 101, 20), [f"{v}%" for v in range(0, 101, 20)])
    acc_ax.set_ylabel("draft acceptance (◆)" if any_acceptance else "")
    if not any_acceptance:
        acc_ax.set_yticks([])
    handles, labels = ax.get_legend_handles_labels()
    if any_acceptance:
        from matplotlib.lines import Line2D

        handles.append(Line2D([], [], marker="D", linestyle="none", color="black", markersize=5))
        labels.append("acceptance (right axis)")
    ax.legend(handles, labels, loc="upper left", fontsize=8, frameon=False, ncols=min(len(labels), 4))
    ax.set_title(title, fontsize=11, loc="left")
    for side in ("top",):
        ax.spines[side].set_visible(False)
        acc_ax.spines[side].set_visible(False)
    fig.tight_layout()
    png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png)
    fig.savefig(svg, metadata={"Date": None})
    plt.close(fig)
