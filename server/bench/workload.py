"""What a bench sends to each target: the recipe's prompts over several runs, or a replayed session.

The runner starts, warms up and stops each target the same way for both; a workload only says
which requests to make, in which order, and how to report them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from server.bench.client import Endpoint, request_body
from server.bench.prompts import BenchPrompt
from server.bench.results import BenchSettings, RequestResult


@dataclass(frozen=True)
class Row:
    """One measured request: its name in the report and its run number."""

    name: str
    run: int = 1
    runs: int = 1

    @property
    def label(self) -> str:
        return f"{self.name} (run {self.run}/{self.runs})" if self.runs > 1 else self.name


class Workload(Protocol):
    def rows(self) -> list[Row]:
        """Every measured request, in the order they are sent."""
        ...

    def body(self, endpoint: Endpoint, row: Row, stop: Sequence[str] | None) -> dict[str, Any]:
        """The request to send for ``row``; ``stop`` is what the target's profile ends answers on
        (None for a server given by URL)."""
        ...

    def seed(self, row: Row) -> int: ...

    def order(self, rows: list[RequestResult]) -> None:
        """Sort the finished rows the way the report lists them."""
        ...

    def measured(self, row: Row, result: RequestResult) -> None:
        """One request's outcome, for a workload whose next requests depend on it."""
        ...


@dataclass(frozen=True)
class PromptWorkload:
    """The recipe's way: every prompt once per run, run after run, each with its own seed."""

    prompts: Sequence[BenchPrompt]
    settings: BenchSettings

    def rows(self) -> list[Row]:
        runs = self.settings.runs
        return [Row(prompt.name, run, runs) for run in range(1, self.settings.runs + 1) for prompt in self.prompts]

    def body(self, endpoint: Endpoint, row: Row, stop: Sequence[str] | None) -> dict[str, Any]:
        text = next(prompt.text for prompt in self.prompts if prompt.name == row.name)
        return request_body(endpoint, text, self.settings.max_tokens, self.seed(row), self.settings)

    def seed(self, row: Row) -> int:
        return self.settings.seed_for(row.run)

    def order(self, rows: list[RequestResult]) -> None:
        position = {prompt.name: i for i, prompt in enumerate(self.prompts)}
        rows.sort(key=lambda row: (position.get(row.prompt, len(position)), row.run))

    def measured(self, row: Row, result: RequestResult) -> None:
        """Every prompt is sent as it is, whatever came before."""
