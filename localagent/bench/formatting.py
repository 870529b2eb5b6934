"""How the figures are written, the same in the terminal table, the report and the chart.

"-" stands for no figure: nothing measured, or (for acceptance) nothing drafted, never 0.
"""

from __future__ import annotations


def _or_dash(value: float | None, spec: str, scale: float = 1.0, suffix: str = "") -> str:
    return "-" if value is None else f"{value * scale:{spec}}{suffix}"


def fmt_tps(value: float | None) -> str:
    return _or_dash(value, ".1f")


def fmt_pct(value: float | None) -> str:
    # "-" means nothing was drafted (or nothing measured): never print it as 0 %.
    return _or_dash(value, ".0f", 100, "%")


def fmt_speedup(value: float | None) -> str:
    return _or_dash(value, ".2f", suffix="×")


def fmt_seconds(value: float | None) -> str:
    return _or_dash(value, ".2f")


def fmt_count(value: float | None) -> str:
    return _or_dash(value, ".0f")


def fmt_ratio(value: float | None) -> str:
    return _or_dash(value, ".3f")
