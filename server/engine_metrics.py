"""Which engine a Prometheus ``/metrics`` page comes from, and its samples under one set of names.

llama-server (``llamacpp:``), vLLM (``vllm:``) and SGLang (``sglang:``) each name their counters
their own way. This module maps them onto the fields of ``server.telemetry.MetricsSnapshot``, so
that the TUI and the bench show speed, drafts and acceptance whichever engine answers. Samples of
one name with different labels (vLLM's per-engine ``engine``, SGLang's ranks) are summed, except
gauges that are rates, which are averaged.

The names follow llama.cpp b11434, vLLM 0.33.0 (vllm/v1/metrics/loggers.py,
vllm/v1/spec_decode/metrics.py) and SGLang 0.5.23 (srt/observability/metrics_collector.py).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from prometheus_client.parser import text_string_to_metric_families

LLAMA_CPP, VLLM, SGLANG = "llama.cpp", "vllm", "sglang"
PREFIXES = {"llamacpp:": LLAMA_CPP, "vllm:": VLLM, "sglang:": SGLANG}

# sample name (without the prefix) -> MetricsSnapshot field
_FIELDS: dict[str, dict[str, str]] = {
    LLAMA_CPP: {
        "prompt_tokens_total": "prompt_tokens_total",
        "prompt_tokens_cached_total": "prompt_tokens_cached_total",
        "prompt_seconds_total": "prompt_seconds_total",
        "tokens_predicted_total": "tokens_predicted_total",
        "tokens_predicted_seconds_total": "tokens_predicted_seconds_total",
        "spec_decode_num_draft_tokens_total": "draft_tokens_total",
        "spec_decode_num_accepted_tokens_total": "accepted_tokens_total",
        "spec_decode_num_drafts_total": "drafts_total",
        "predicted_tokens_seconds": "predicted_tokens_seconds",
        "prompt_tokens_seconds": "prompt_tokens_seconds",
        "requests_processing": "requests_processing",
    },
    VLLM: {
        "prompt_tokens_total": "prompt_tokens_total",
        "generation_tokens_total": "tokens_predicted_total",
        "spec_decode_num_draft_tokens_total": "draft_tokens_total",
        "spec_decode_num_accepted_tokens_total": "accepted_tokens_total",
        "spec_decode_num_drafts_total": "drafts_total",
        "num_requests_running": "requests_processing",
        "prefix_cache_queries_total": "prefix_cache_queries_total",
        "prefix_cache_hits_total": "prefix_cache_hits_total",
        # Before 0.9 the same counters had a gpu_ prefix.
        "gpu_prefix_cache_queries_total": "prefix_cache_queries_total",
        "gpu_prefix_cache_hits_total": "prefix_cache_hits_total",
    },
    SGLANG: {
        "prompt_tokens_total": "prompt_tokens_total",
        "generation_tokens_total": "tokens_predicted_total",
        "num_running_reqs": "requests_processing",
        "gen_throughput": "predicted_tokens_seconds",
        # SGLang publishes no drafted/accepted counters: only its own averages, as gauges.
        "spec_accept_rate": "reported_acceptance",
        "spec_accept_length": "reported_accepted_length",
    },
}
# Gauges that are rates or averages: several ranks report the same quantity, so they are averaged.
_AVERAGED = frozenset({"predicted_tokens_seconds", "reported_acceptance", "reported_accepted_length"})
_PER_POSITION = "spec_decode_num_accepted_tokens_per_pos_total"
# SGLang's prefill tokens by where they came from, updated as they happen.
_SGLANG_REALTIME = "realtime_tokens_total"


@dataclass
class EngineSamples:
    engine: str
    values: dict[str, float] = field(default_factory=dict)
    accepted_per_position: tuple[float, ...] = ()


def detect_engine(names: Iterable[str]) -> str | None:
    """The engine whose prefix most sample names carry; None for a page of none of them."""
    counts: dict[str, int] = defaultdict(int)
    for name in names:
        for prefix, engine in PREFIXES.items():
            if name.startswith(prefix):
                counts[engine] += 1
    return max(counts, key=lambda engine: counts[engine]) if counts else None


def collect(text: str) -> EngineSamples:
    """The page's samples under MetricsSnapshot's names; raises ValueError on text that is not
    Prometheus exposition format."""
    samples = [sample for family in text_string_to_metric_families(text) for sample in family.samples]
    engine = detect_engine(sample.name for sample in samples) or LLAMA_CPP
    prefix = next(p for p, e in PREFIXES.items() if e == engine)
    table = _FIELDS[engine]
    sums: dict[str, float] = defaultdict(float)
    counts: dict[str, int] = defaultdict(int)
    positions: dict[int, float] = defaultdict(float)
    for sample in samples:
        name = sample.name.removeprefix(prefix)
        if name == _PER_POSITION:
            positions[int(sample.labels.get("position", 0))] += float(sample.value)
        elif name == _SGLANG_REALTIME and engine == SGLANG:
            mode = sample.labels.get("mode")
            if mode in ("prefill_compute", "prefill_cache"):
                sums["prefix_cache_queries_total"] += float(sample.value)
                counts["prefix_cache_queries_total"] = 1
            if mode == "prefill_cache":
                sums["prefix_cache_hits_total"] += float(sample.value)
                counts["prefix_cache_hits_total"] = 1
        elif name in table:
            sums[table[name]] += float(sample.value)
            counts[table[name]] += 1
    values = {key: (total / counts[key] if key in _AVERAGED else total) for key, total in sums.items()}
    return EngineSamples(engine, values, tuple(positions[i] for i in sorted(positions)))
