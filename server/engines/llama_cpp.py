"""llama-server (llama.cpp), the engine localagent builds, configures and launches itself.

Its launch plan is ``server.argv`` (the binary's capabilities decide the flags); here is what it
is to the rest: its counters (names as of b11434), and ``/props``, which only it serves.
"""

from __future__ import annotations

from dataclasses import dataclass

from server.engines.base import Engine, Fetch, Identified, text_version


@dataclass(frozen=True)
class LlamaCpp(Engine):
    async def identify(self, fetch: Fetch) -> Identified | None:
        props = await fetch("/props")
        if props is not None and ("build_info" in props or "default_generation_settings" in props):
            return Identified(text_version(props.get("build_info")))
        return None


LLAMA_CPP = LlamaCpp(
    key="llama.cpp",
    display_name="llama.cpp",
    metrics_prefix="llamacpp:",
    metric_fields={
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
    drafts_per_request=True,
)
