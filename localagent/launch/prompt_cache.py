"""Measured agent prompts, kept in the state folder: measuring runs the agent, so it happens once
per agent, agent version and model (a new version may bring a longer prompt, and another model's
tokenizer counts the same text differently)."""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

from localagent.paths import app_paths

CACHE_FILE = "agent-prompts.json"


@dataclass(frozen=True)
class PromptKey:
    agent: str
    version: str
    model: str

    @property
    def text(self) -> str:
        return f"{self.agent} {self.version} on {self.model}"


class PromptCache:
    """``{"prompts": {"<agent> <version> on <model>": {"prompt_tokens": N, ...}}}`` in one JSON file.
    A file that cannot be read is treated as empty, and replaced on the next measurement."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def get(self, key: PromptKey) -> int | None:
        entry = self._read().get(key.text)
        tokens = entry.get("prompt_tokens") if isinstance(entry, dict) else None
        return tokens if isinstance(tokens, int) and tokens > 0 else None

    def put(self, key: PromptKey, tokens: int) -> None:
        prompts = self._read()
        prompts[key.text] = {
            "agent": key.agent,
            "version": key.version,
            "model": key.model,
            "prompt_tokens": tokens,
            "measured_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # Written beside and renamed over: two launches at once never leave half a file.
        partial = self.path.with_name(f".{self.path.name}.{os.getpid()}")
        partial.write_text(json.dumps({"prompts": prompts}, indent=2) + "\n")
        partial.replace(self.path)

    def _read(self) -> dict[str, object]:
        try:
            data = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}
        prompts = data.get("prompts") if isinstance(data, dict) else None
        return dict(prompts) if isinstance(prompts, dict) else {}


def default_prompt_cache() -> PromptCache:
    return PromptCache(app_paths().state / CACHE_FILE)
