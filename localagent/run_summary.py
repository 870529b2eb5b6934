"""What a headless run ends with: its status, answer and numbers, and the exit code they give."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agent.events import TurnFinished

EXIT_CODES = {
    "done": 0,
    "error": 1,
    "max_turns": 3,
    "timeout": 3,
    "loop": 1,
    "format_errors": 1,
    "denied": 1,
    "cancelled": 1,
    "empty_answer": 1,
    "length": 1,
}


@dataclass
class RunSummary:
    status: str = "error"
    final_text: str = ""
    message: str = ""
    turns: int = 0
    steps: int = 0
    tool_calls: int = 0
    files_changed: list[str] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    tokens_per_second: float | None = None
    drafted: int | None = None
    accepted: int | None = None
    duration_s: float = 0.0
    session_id: str | None = None
    # Per-request drafting (agent.speculation_policy): the last choice and its reason, and how
    # many requests went without drafts; None where the server's own settings served every request.
    speculation: str | None = None
    requests_without_drafts: int = 0

    @property
    def acceptance(self) -> float | None:
        return (self.accepted or 0) / self.drafted if self.drafted else None

    def to_dict(self) -> dict[str, Any]:
        data = {k: v for k, v in self.__dict__.items()}
        data["acceptance"] = self.acceptance
        return data

    @property
    def exit_code(self) -> int:
        return EXIT_CODES.get(self.status, 1)


def stop_message(event: TurnFinished) -> str:
    """Why the turn stopped. The core says it in its own terms; a limit a flag of `localagent run`
    sets is said here, naming that flag (the timeout, which this runner enforces, likewise)."""
    if event.reason == "max_turns":
        return f"stopped after {event.steps} model steps (--max-turns)"
    return event.message
