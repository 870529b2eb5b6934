"""Which engine a Prometheus ``/metrics`` page comes from, and its samples under one set of names.

llama-server (``llamacpp:``), vLLM (``vllm:``) and SGLang (``sglang:``) each name their counters
their own way (each engine's module lists its names). This module maps them onto the fields of
``server.telemetry.MetricsSnapshot``, so that the TUI and the bench show speed, drafts and
acceptance whichever engine answers. Samples of one name with different labels (vLLM's per-engine ``engine``, SGLang's ranks) are summed, except
gauges that are rates, which are averaged.

The names follow llama.cpp b11434, vLLM 0.33.0 (vllm/v1/metrics/loggers.py,
vllm/v1/spec_decode/metrics.py) and SGLang 0.5.23 (srt/observability/metrics_collector.py).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from prometheus_client.parser import text_string_to_metric_families

from server.engines import ENGINES, LLAMA_CPP, engine_named

# Gauges that are rates or averages: several ranks report the same quantity, so they are averaged.
_AVERAGED = frozenset({"predicted_tokens_seconds", "reported_acceptance", "reported_accepted_length"})
_PER_POSITION = "spec_decode_num_accepted_tokens_per_pos_total"


@dataclass
class EngineSamples:
    engine: str
    values: dict[str, float] = field(default_factory=dict)
    accepted_per_position: tuple[float, ...] = ()


def detect_engine(names: Iterable[str]) -> str | None:
    """The engine whose prefix most sample names carry; None for a page of none of them."""
    counts: dict[str, int] = defaultdict(int)
    for name in names:
        for engine in ENGINES.values():
            if name.startswith(engine.metrics_prefix):
                counts[engine.key] += 1
    return max(counts, key=lambda key: counts[key]) if counts else None


def collect(text: str) -> EngineSamples:
    """The page's samples under MetricsSnapshot's names; raises ValueError on text that is not
    Prometheus exposition format."""
    samples = [sample for family in text_string_to_metric_families(text) for sample in family.samples]
    engine = engine_named(detect_engine(sample.name for sample in samples) or LLAMA_CPP.key)
    sums: dict[str, float] = defaultdict(float)
    counts: dict[str, int] = defaultdict(int)
    positions: dict[int, float] = defaultdict(float)

    def add(key: str, value: float) -> None:
        sums[key] += value
        counts[key] += 1

    for sample in samples:
        name = sample.name.removeprefix(engine.metrics_prefix)
        if name == _PER_POSITION:
            positions[int(sample.labels.get("position", 0))] += float(sample.value)
        elif engine.fold_sample(name, sample.labels, float(sample.value), add):
            continue
        elif name in engine.metric_fields:
            add(engine.metric_fields[name], float(sample.value))
    values = {key: (total / counts[key] if key in _AVERAGED else total) for key, total in sums.items()}
    return EngineSamples(engine.key, values, tuple(positions[i] for i in sorted(positions)))
