"""vLLM: its launch command (option names as of vLLM 0.33.0, ``vllm/config/speculative.py`` and
``vllm/engine/arg_utils.py``), its counters (``vllm/v1/metrics/loggers.py``,
``vllm/v1/spec_decode/metrics.py``) and ``/version``. DFlash is ``"method": "dflash"`` (from 0.20;
the Gemma 4 draft, with its sliding-window layers, from 0.25)."""

from __future__ import annotations

import json
from dataclasses import dataclass

from server.engines.base import Command, Fetch, Identified, LaunchedEngine, text_version
from server.engines.launch_common import DFLASH_BLOCK, model_argument, size_options
from server.profiles import Profile, Speculative
from tools.program_path import which_absolute

# vLLM wants a number of drafted tokens for every method.
DEFAULT_TOKENS = {"eagle": 3, "eagle3": 3, "draft": 4, "ngram-simple": 4}
METHODS = {"dflash": "dflash", "eagle": "eagle", "eagle3": "eagle3", "draft": "draft_model", "ngram-simple": "ngram"}


@dataclass(frozen=True)
class Vllm(LaunchedEngine):
    async def identify(self, fetch: Fetch) -> Identified | None:
        version = await fetch("/version")
        if version is not None and "version" in version:
            return Identified(text_version(version["version"]))
        return None

    def installed_launcher(self) -> tuple[str, ...] | None:
        found = which_absolute("vllm")
        return (found, "serve") if found else None

    def command(self, profile: Profile, start: list[str], host: str, port: int, api_key: str | None) -> Command:
        options = size_options(profile, "--tensor-parallel-size", "--max-model-len")
        if profile.speculative.enabled:
            options += ["--speculative-config", json.dumps(speculative_config(profile.speculative))]
        argv = [*start, model_argument(profile.model), "--host", host, "--port", str(port), *options]
        # vLLM reads the key from its environment; /health and /metrics stay open.
        return Command(argv, env={"VLLM_API_KEY": api_key} if api_key else {})


def speculative_config(spec: Speculative) -> dict[str, object]:
    config: dict[str, object] = {"method": METHODS[spec.type]}
    if spec.draft_model is not None:
        config["model"] = model_argument(spec.draft_model)
    default = DFLASH_BLOCK - 1 if spec.type == "dflash" else DEFAULT_TOKENS[spec.type]
    config["num_speculative_tokens"] = spec.n_max or default
    if spec.type == "ngram-simple":
        for key, value in (("prompt_lookup_max", spec.ngram_n_max), ("prompt_lookup_min", spec.ngram_n_min)):
            if value is not None:
                config[key] = value
    return config


VLLM = Vllm(
    key="vllm",
    display_name="vLLM",
    metrics_prefix="vllm:",
    metric_fields={
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
    owned_by="vllm",
    shown_launcher=("vllm", "serve"),
    install="pip install 'vllm>=0.25' (DFlash for Gemma 4 needs 0.25 or later)",
)
