"""``--sweep``: the same benchmark over a small grid of speculative settings of one profile."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from server.bench.summary import OVERALL, Summary
from server.errors import BenchInputError
from server.profile_loading import first_error
from server.profiles import Profile, Speculative

# Draft models (DFlash and classic drafts): how many tokens to draft, and the confidence floor
# below which drafting stops early (raising it fixed a low-acceptance report upstream).
DRAFT_GRID: dict[str, tuple[Any, ...]] = {"n_max": (4, 8, 15), "p_min": (0.0, 0.5)}
# ngram-mod drafts between n_min and n_max tokens per hit (defaults 48/64: long drafts that cost a
# small model a large verification batch); a handful of shorter ranges.
NGRAM_MOD_POINTS: tuple[dict[str, Any], ...] = (
    {"ngram_n_min": 4, "ngram_n_max": 16},
    {"ngram_n_min": 8, "ngram_n_max": 32},
    {"ngram_n_min": 16, "ngram_n_max": 48},
    {"ngram_n_min": 32, "ngram_n_max": 64},
)
SWEEP_KEYS: dict[str, tuple[str, ...]] = {
    "dflash": ("n_max", "n_min", "p_min"),
    "draft": ("n_max", "n_min", "p_min"),
    "ngram-mod": ("ngram_n_min", "ngram_n_max", "ngram_n_match"),
}
CURRENT = "current"
SWEEP_RUNS = 1
SWEEP_MAX_TOKENS = 256


@dataclass(frozen=True)
class Variant:
    name: str  # the generated profile name the manager starts
    label: str  # what the table shows
    changes: dict[str, Any]


def parse_grid(items: Sequence[str], spec_type: str) -> list[dict[str, Any]]:
    """``KEY=V1,V2`` items into grid points (their product)."""
    allowed = SWEEP_KEYS[spec_type]
    axes: dict[str, list[Any]] = {}
    for item in items:
        key, sep, values = item.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or not values.strip():
            raise BenchInputError(f"--grid {item!r}: write KEY=V1,V2 (e.g. n_max=4,8,15)")
        if key not in allowed:
            raise BenchInputError(f"--grid {item!r}: for {spec_type} profiles the keys are {', '.join(allowed)}")
        kind = float if key == "p_min" else int
        try:
            axes[key] = [kind(v) for v in values.split(",") if v.strip()]
        except ValueError:
            raise BenchInputError(
                f"--grid {item!r}: {key} takes {'numbers' if kind is float else 'whole numbers'}"
            ) from None
    return [dict(zip(axes, combo, strict=True)) for combo in itertools.product(*axes.values())]


def default_grid(spec_type: str) -> list[dict[str, Any]]:
    if spec_type == "ngram-mod":
        return [dict(point) for point in NGRAM_MOD_POINTS]
    return [dict(zip(DRAFT_GRID, combo, strict=True)) for combo in itertools.product(*DRAFT_GRID.values())]


def check_sweepable(profile: Profile) -> None:
    spec_type = profile.speculative.type
    if spec_type not in SWEEP_KEYS:
        kinds = ", ".join(SWEEP_KEYS)
        what = "no speculative decoding" if spec_type == "none" else f"speculative type {spec_type}"
        raise BenchInputError(f"--sweep tunes {kinds} profiles; {profile.name!r} has {what}")


def build_variants(profile: Profile, grid: Sequence[dict[str, Any]]) -> tuple[list[Variant], dict[str, Profile]]:
    """The current settings first (the baseline of the sweep), then one variant per grid point."""
    variants = [Variant(profile.name, CURRENT, {})]
    profiles: dict[str, Profile] = {}
    seen: set[tuple[tuple[str, Any], ...]] = set()
    for point in grid:
        key = tuple(sorted(point.items()))
        if key in seen or _invalid_range(profile.speculative, point):
            continue
        seen.add(key)
        name = f"{profile.name}~sweep{len(variants)}"
        try:
            spec = Speculative.model_validate({**profile.speculative.model_dump(exclude_unset=True), **point})
        except ValidationError as exc:
            raise BenchInputError(f"--grid: {first_error(exc)}") from None
        profiles[name] = profile.model_copy(update={"name": name, "speculative": spec})
        variants.append(Variant(name, " ".join(f"{k}={v}" for k, v in point.items()), dict(point)))
    if len(variants) == 1:
        raise BenchInputError("--grid leaves nothing to try besides the current settings")
    return variants, profiles


def _invalid_range(spec: Speculative, point: dict[str, Any]) -> bool:
    # A minimum above the maximum is not a setting, just an error from the server.
    for low, high in (("ngram_n_min", "ngram_n_max"), ("n_min", "n_max")):
        lo = point.get(low, getattr(spec, low))
        hi = point.get(high, getattr(spec, high))
        if lo is not None and hi is not None and lo > hi:
            return True
    return False


def fastest(summary: Summary, variants: Sequence[Variant]) -> Variant | None:
    """The variant with the highest median server tok/s over all prompts, among those with no failures."""
    best: tuple[float, Variant] | None = None
    for variant in variants:
        cell = summary.cell(variant.label, OVERALL)
        if cell is None or cell.server_tps is None or cell.runs_failed:
            continue
        if best is None or cell.server_tps > best[0]:
            best = (cell.server_tps, variant)
    return best[1] if best else None
