"""What a benchmark measured: plain dataclasses, written to results.json as they are."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from server.bench.prompts import BenchPrompt

TargetKind = Literal["profile", "url"]


@dataclass(frozen=True)
class SamplingSettings:
    # The recipe's sampling; sent with every request so that servers started with other defaults
    # (and --base-url servers) are measured the same way.
    temperature: float = 0.7
    top_k: int = 64
    top_p: float = 0.95
    min_p: float = 0.0


@dataclass(frozen=True)
class BenchSettings:
    runs: int = 3
    max_tokens: int = 1200
    seed: int = 42
    warmup_max_tokens: int = 16
    sampling: SamplingSettings = SamplingSettings()
    load: int = 0  # CPU-bound neighbour processes during the measured runs (bench --load N)

    def seed_for(self, run: int) -> int:
        # Each run has its own fixed seed: repeatable, yet run 2 is not a replay of run 1, which an
        # n-gram pool shared across requests (ngram-mod) would draft perfectly and flatter.
        return self.seed + run - 1


@dataclass
class RequestResult:
    prompt: str
    run: int
    ok: bool = True
    error: str | None = None
    seed: int | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int | None = None
    prompt_processed: int | None = None  # prompt tokens the server had to read (not from its cache)
    server_tps: float | None = None
    gen_seconds: float | None = None
    prompt_seconds: float | None = None
    draft_n: int | None = None
    draft_accepted: int | None = None
    client_tps: float | None = None  # what arrived here over the stream (see client.observed_rates)
    server_window_tps: float | None = None  # the server's own tok/s over that same window
    ttft_s: float | None = None
    wall_s: float | None = None
    finish_reason: str | None = None

    @property
    def acceptance(self) -> float | None:
        # No draft fields means nothing was drafted: that is "no acceptance", not 0 %.
        if not self.draft_n or self.draft_accepted is None:
            return None
        return self.draft_accepted / self.draft_n

    @property
    def overhead_ratio(self) -> float | None:
        """Client tok/s over server tok/s for the same tokens in the same window: 1.0 = no overhead."""
        server = self.server_window_tps or self.server_tps
        if not self.client_tps or not server:
            return None
        return self.client_tps / server

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "acceptance": self.acceptance, "overhead_ratio": self.overhead_ratio}


@dataclass
class SpecMetrics:
    """/metrics counters over the measured runs of one target (warm-up excluded)."""

    tokens_predicted: float
    drafts: float | None = None
    draft_tokens: float | None = None
    accepted_tokens: float | None = None
    acceptance: float | None = None
    mean_accepted_length: float | None = None
    acceptance_by_position: list[float] = field(default_factory=list)


@dataclass
class TargetResult:
    label: str
    kind: TargetKind
    profile: str | None = None
    base_url: str | None = None
    speculative: str | None = None  # the profile's speculative type; None for a URL
    settings: dict[str, Any] = field(default_factory=dict)  # swept speculative values, if any
    command: str | None = None  # the exact llama-server command line, for started profiles
    notes: list[str] = field(default_factory=list)
    model: str | None = None
    build_info: str | None = None
    engine: str | None = None  # who answered, with its version ("vLLM 0.33.0"; server.engines.identity)
    error: str | None = None  # the server could not be started or reached
    metrics: SpecMetrics | None = None
    requests: list[RequestResult] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["requests"] = [request.to_json() for request in self.requests]
        return data


@dataclass(frozen=True)
class MachineInfo:
    platform: str
    machine: str
    python: str
    cpu_count: int | None
    cpus_usable: int | None
    cpu_model: str | None
    memory_gb: float | None
    gpus: list[str]


@dataclass
class BenchResults:
    started_at: str
    finished_at: str | None
    command_line: str
    machine: MachineInfo
    settings: BenchSettings
    prompts: list[BenchPrompt]
    targets: list[TargetResult]
    binary: str | None = None
    binary_version: str | None = None
    sweep: dict[str, Any] | None = None  # set by --sweep: the base profile, the grid and the winner

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["targets"] = [target.to_json() for target in self.targets]
        return data

    @property
    def failed_requests(self) -> list[tuple[str, RequestResult]]:
        return [(t.label, r) for t in self.targets for r in t.requests if not r.ok]
