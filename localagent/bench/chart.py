"""The chart: server tok/s by prompt and target as grouped bars, each bar labelled with its speed,
its speedup over the first target, and (inside the bar) its draft acceptance."""

from __future__ import annotations

from pathlib import Path

from server.bench.summary import OVERALL, Summary

# Colour-blind-safe (Okabe-Ito); the first target, the baseline, is the neutral grey.
COLOURS = ["#7f7f7f", "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#56B4E9", "#E69F00", "#000000"]


# long: one matplotlib figure drawn step by step; split up, the picture would be in pieces.
def write_chart(summary: Summary, png: Path, svg: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")  # files only: no display, no GUI toolkit
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    # Same data, same SVG bytes: the sample report does not churn in version control.
    matplotlib.rcParams["svg.hashsalt"] = "localagent-bench"
    # Names are text: a "$" in a file or profile name is not the start of a formula.
    matplotlib.rcParams["text.parse_math"] = False

    groups = [*summary.prompts, OVERALL]
    targets = summary.targets
    n = max(len(targets), 1)
    width = 0.8 / n
    fig_width = min(max(7.0, 1.2 + 0.75 * len(groups) * max(n, 2)), 18.0)
    fig, ax = plt.subplots(figsize=(fig_width, 5.2), dpi=120)
    top = max((c.server_tps or 0.0 for c in summary.cells), default=0.0)
    for t, target in enumerate(targets):
        colour = COLOURS[t % len(COLOURS)]
        for g, group in enumerate(groups):
            cell = summary.cell(target, group)
            x = g - 0.4 + width * (t + 0.5)
            if cell is None or cell.server_tps is None:
                ax.text(x, top * 0.02, "failed", rotation=90, ha="center", va="bottom", fontsize=8, color="#D55E00")
                continue
            ax.bar(x, cell.server_tps, width * 0.92, color=colour, edgecolor="white", linewidth=0.5)
            label = f"{cell.server_tps:.0f}"
            if t > 0 and cell.speedup is not None:
                label += f"\n{cell.speedup:.2f}×"
            ax.annotate(
                label,
                (x, cell.server_tps),
                xytext=(0, 2),
                textcoords="offset points",
                ha="center",
                va="bottom",
                fontsize=8,
            )
            if cell.acceptance is not None:
                # Inside the bar, at its foot: never in the way of the speed label on top.
                tall = cell.server_tps > top * 0.12
                ax.annotate(
                    f"{cell.acceptance * 100:.0f}%\naccepted",
                    (x, 0),
                    xytext=(0, 3),
                    textcoords="offset points",
                    ha="center",
                    va="bottom",
                    fontsize=7,
                    fontweight="bold",
                    color="white" if tall else "black",
                )
    ax.set_xticks(range(len(groups)), [g if g != OVERALL else "overall\n(median)" for g in groups])
    ax.set_ylabel("tokens/s (server, median over runs)")
    ax.set_ylim(0, top * 1.25 if top else 1)
    ax.set_xlim(-0.6, len(groups) - 0.4)
    ax.grid(axis="y", alpha=0.3)
    ax.set_axisbelow(True)
    if len(groups) > 1:
        ax.axvline(len(groups) - 1.5, color="#cccccc", linewidth=0.8)
    handles: list[Patch] = [Patch(color=COLOURS[t % len(COLOURS)], label=target) for t, target in enumerate(targets)]
    ax.legend(handles=handles, loc="upper left", fontsize=8, frameon=False, ncols=min(len(handles), 4))
    ax.set_title(title, fontsize=11, loc="left")
    if len(targets) > 1:
        ax.set_title(f"×: speedup against {targets[0]}", fontsize=8, loc="right", color="#555555")
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    fig.tight_layout()
    png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png)
    fig.savefig(svg, metadata={"Date": None})
    plt.close(fig)
