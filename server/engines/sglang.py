"""SGLang: its launch command (option names as of SGLang 0.5.23, ``srt/arg_groups/fields/spec.py``
and ``srt/arg_groups/speculative_hook.py``), its counters
(``srt/observability/metrics_collector.py``) and ``/server_info``. DFlash is
``--speculative-algorithm DFLASH`` (from 0.5.11; Gemma 4 targets from 0.5.14)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from server.engines.base import Command, Fetch, Identified, LaunchedEngine, text_version
from server.engines.launch_common import DFLASH_BLOCK, has_module, model_argument, size_options
from server.profiles import Profile
from tools.program_path import which_absolute

ALGORITHMS = {"dflash": "DFLASH", "eagle": "EAGLE", "eagle3": "EAGLE3", "draft": "STANDALONE", "ngram-simple": "NGRAM"}
# Prefill tokens by where they came from, updated as they happen.
REALTIME_TOKENS = "realtime_tokens_total"


@dataclass(frozen=True)
class Sglang(LaunchedEngine):
    async def identify(self, fetch: Fetch) -> Identified | None:
        for path in ("/server_info", "/get_server_info"):  # renamed in 0.5.x
            info = await fetch(path)
            if info is not None and "version" in info:
                return Identified(text_version(info["version"]))
        return None

    def installed_launcher(self) -> tuple[str, ...] | None:
        for python in dict.fromkeys((sys.executable, which_absolute("python3"), which_absolute("python"))):
            if python and has_module(python, "sglang"):
                return (python, "-m", "sglang.launch_server")
        return None

    def command(self, profile: Profile, start: list[str], host: str, port: int, api_key: str | None) -> Command:
        model = model_argument(profile.model)
        argv = [*start, "--model-path", model, "--host", host, "--port", str(port), "--enable-metrics"]
        argv += [*size_options(profile, "--tp-size", "--context-length"), *speculative_options(profile)]
        if not api_key:
            return Command(argv)
        note = (
            "note: SGLang takes its API key only on its command line, where other users of this machine can "
            "read it (/proc/PID/cmdline); localagent shows it nowhere"
        )
        return Command([*argv, "--api-key", api_key], notes=[note])

    def fold_sample(
        self, name: str, labels: Mapping[str, str], value: float, add: Callable[[str, float], None]
    ) -> bool:
        if name != REALTIME_TOKENS:
            return False
        mode = labels.get("mode")
        if mode in ("prefill_compute", "prefill_cache"):
            add("prefix_cache_queries_total", value)
        if mode == "prefill_cache":
            add("prefix_cache_hits_total", value)
        return True


def speculative_options(profile: Profile) -> list[str]:
    spec = profile.speculative
    if not spec.enabled:
        return []
    options = ["--speculative-algorithm", ALGORITHMS[spec.type]]
    if spec.draft_model is not None:
        options += ["--speculative-draft-model-path", model_argument(spec.draft_model)]
    if spec.type == "dflash":
        # The whole block, anchor included; SGLang fixes steps and top-k at 1 for DFlash itself.
        options += ["--speculative-num-draft-tokens", str((spec.n_max or DFLASH_BLOCK - 1) + 1)]
    elif spec.type == "ngram-simple":
        if spec.n_max:
            options += ["--speculative-num-draft-tokens", str(spec.n_max)]
    elif spec.n_max:
        # A chain (top-k 1) of n_max steps verifies n_max drafts plus the anchor. Unset, SGLang
        # chooses all three itself (it refuses top-k or draft tokens without the steps).
        steps = str(spec.n_max)
        options += ["--speculative-num-steps", steps, "--speculative-eagle-topk", "1"]
        options += ["--speculative-num-draft-tokens", str(spec.n_max + 1)]
    return options


SGLANG = Sglang(
    key="sglang",
    display_name="SGLang",
    metrics_prefix="sglang:",
    metric_fields={
        "prompt_tokens_total": "prompt_tokens_total",
        "generation_tokens_total": "tokens_predicted_total",
        "num_running_reqs": "requests_processing",
        "gen_throughput": "predicted_tokens_seconds",
        # SGLang publishes no drafted/accepted counters: only its own averages, as gauges.
        "spec_accept_rate": "reported_acceptance",
        "spec_accept_length": "reported_accepted_length",
    },
    owned_by="sglang",
    shown_launcher=("python", "-m", "sglang.launch_server"),
    install="pip install 'sglang[all]>=0.5.14' (DFlash for Gemma 4 needs 0.5.14 or later)",
)
