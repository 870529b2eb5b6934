"""The replay's chart: generation tok/s (left) and draft acceptance (right) by prompt length, one
series per target, so that where speculation pays, and where it stops paying, is one look."""

from __future__ import annotations

from pathlib import Path

from localagent.bench.chart import COLOURS
from server.bench.replay_summary import ReplaySummary


def write_replay_chart(summary: ReplaySummary, png: Path, svg: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")  # files only: no display, no GUI toolkit
    import matplotlib.pyplot as plt

    matplotlib.rcParams["svg.hashsalt"] = "localagent-bench"  # same data, same SVG bytes
    # Names are text: a "$" in a file or profile name is not the start of a formula.
    matplotlib.rcParams["text.parse_math"] = False
    labels = [b.label for b in summary.bins]
    n = max(len(summary.targets), 1)
    width = 0.8 / n
    fig, (speed, accept) = plt.subplots(1, 2, figsize=(min(max(9.0, 2.0 + 1.4 * len(labels) * n), 18.0), 4.8), dpi=120)
    for t, target in enumerate(summary.targets):
        colour = COLOURS[t % len(COLOURS)]
        xs, tps, acc_x, acc = [], [], [], []
        for b, length_bin in enumerate(summary.bins):
            cell = length_bin.cell(target)
            if cell is None or cell.tps is None:
                continue
            xs.append(b - 0.4 + width * (t + 0.5))
            tps.append(cell.tps)
            if cell.acceptance is not None:
                acc_x.append(b)
                acc.append(cell.acceptance * 100)
        speed.bar(xs, tps, width * 0.92, color=colour, label=target)
        for x, value in zip(xs, tps, strict=True):
            speed.annotate(
                f"{value:.0f}",
                (x, value),
                xytext=(0, 2),
                textcoords="offset points",
                ha="center",
                va="bottom",
                fontsize=7,
            )
        if acc:
            accept.plot(acc_x, acc, marker="o", color=colour, label=target)
    for ax in (speed, accept):
        ax.set_xticks(range(len(labels)), labels)
        ax.set_xlabel("prompt tokens")
        ax.grid(axis="y", alpha=0.3)
        ax.set_axisbelow(True)
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
    speed.set_ylabel("generation tokens/s (pooled)")
    speed.legend(fontsize=8, frameon=False)
    accept.set_ylabel("draft tokens accepted (%)")
    accept.set_ylim(0, 105)
    accept.set_xlim(-0.5, max(len(labels) - 0.5, 0.5))
    if not accept.lines:
        accept.text(0.5, 0.5, "nothing drafted", transform=accept.transAxes, ha="center", color="#555555")
    else:
        accept.legend(fontsize=8, frameon=False)
    fig.suptitle(title, fontsize=11, x=0.01, ha="left")
    fig.tight_layout()
    png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png)
    fig.savefig(svg, metadata={"Date": None})
    plt.close(fig)
