"""`localagent run`: a consumer of the event stream that never waits for a person.

Final answer on stdout, progress on stderr. Exit codes: 0 done, 1 error, 2 bad input or
configuration (raised before the run), 3 turn or time limit.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Literal, TextIO

from agent.events import (
    ErrorEvent,
    Event,
    Metrics,
    Notice,
    ToolCallFinished,
    ToolCallStarted,
    TurnFinished,
    TurnStarted,
)
from agent.loop import Agent
from agent.request_totals import RequestTotals

OutputFormat = Literal["text", "json", "stream-json"]
EXIT_CODES = {
    "done": 0, "error": 1, "max_turns": 3, "timeout": 3, "loop": 1, "format_errors": 1, "denied": 1,
    "cancelled": 1, "empty_answer": 1, "length": 1,
}


def mode_hint(mode: str) -> str:
    """How a person running headless picks a permission mode (for the policy's remedies)."""
    return f"--mode {mode}"


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

    @property
    def acceptance(self) -> float | None:
        return self.accepted / self.drafted if self.drafted else None

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


class HeadlessRunner:
    def __init__(self, agent: Agent, output: OutputFormat = "text", stdout: TextIO = sys.stdout, stderr: TextIO = sys.stderr) -> None:
        self.agent = agent
        self.output = output
        self.stdout = stdout
        self.stderr = stderr
        self.summary = RunSummary()
        self._changed: set[str] = set()
        self._totals = RequestTotals()
        self._last_metrics: Metrics | None = None

    async def run(self, task: str, timeout: float | None = None) -> RunSummary:
        started = time.monotonic()
        try:
            await asyncio.wait_for(self._consume(task), timeout)
        except TimeoutError:
            self.summary.status = "timeout"
            self.summary.message = f"stopped after {timeout:.0f} s (--timeout)"
        except asyncio.CancelledError:
            # Ctrl-C, SIGTERM or SIGHUP: the loop has killed the running tool and recorded the turn
            # as cancelled; the summary still goes out before the cancellation carries on.
            self.summary.status = "cancelled"
            self.summary.message = self.summary.message or "cancelled"
            self._close_request()
            self.summary.duration_s = time.monotonic() - started
            self._finish()
            raise
        self._close_request()
        self.summary.duration_s = time.monotonic() - started
        self.summary.files_changed = sorted(self._changed)
        self.summary.tokens_per_second = self._totals.tokens_per_second
        self._finish()
        return self.summary

    async def _consume(self, task: str) -> None:
        async for event in self.agent.run_turn(task):
            self._on_event(event)

    def _on_event(self, event: Event) -> None:
        if self.output == "stream-json":
            self.stdout.write(json.dumps(event.to_dict(), default=str) + "\n")
            self.stdout.flush()
        if isinstance(event, Metrics):
            if self._last_metrics is not None and event.predicted_n < self._last_metrics.predicted_n:
                self._close_request()
            self._last_metrics = event
        elif isinstance(event, ToolCallStarted):
            self._close_request()
            self._progress(f"→ {event.name}: {event.summary}")
        elif isinstance(event, ToolCallFinished):
            self.summary.tool_calls += 1
            status = "error" if event.is_error else "ok"
            self._progress(f"  {status} in {event.duration_s:.1f} s")
            for path in event.metadata.get("files_changed", []) or []:
                self._changed.add(str(path))
        elif isinstance(event, Notice):
            self._progress(f"note: {event.text}")
        elif isinstance(event, ErrorEvent):
            self._progress(f"error: {event.message}")
        elif isinstance(event, TurnStarted):
            # A run sends one user message, so it makes one user turn; counted as it starts, so a
            # run stopped before the loop began its turn (a timeout, a signal) says 0. The session
            # may hold earlier turns (--resume): the loop's own turn number counts those too.
            self.summary.turns += 1
        elif isinstance(event, TurnFinished):
            self.summary.status = event.reason
            self.summary.final_text = event.final_text
            self.summary.message = stop_message(event)
            self.summary.steps = event.steps
            self.summary.prompt_tokens = event.prompt_tokens
            self.summary.completion_tokens = event.completion_tokens

    def _close_request(self) -> None:
        """Fold the last request's timings into the run's totals."""
        if self._last_metrics is None:
            return
        self._totals.add(self._last_metrics)
        self._last_metrics = None
        self.summary.drafted, self.summary.accepted = self._totals.drafted, self._totals.accepted

    def _progress(self, line: str) -> None:
        if self.output != "stream-json":
            self.stderr.write(line + "\n")
            self.stderr.flush()

    def _finish(self) -> None:
        s = self.summary
        if self.output == "json":
            self.stdout.write(json.dumps(s.to_dict(), indent=2) + "\n")
        elif self.output == "stream-json":
            self.stdout.write(json.dumps({"type": "result", **s.to_dict()}) + "\n")
        else:
            if s.final_text:
                self.stdout.write(s.final_text.rstrip() + "\n")
            speed = f", {s.tokens_per_second:.1f} tok/s" if s.tokens_per_second else ""
            drafts = f", draft acceptance {s.acceptance:.0%}" if s.acceptance is not None else ""
            self._progress(f"[{s.status}] {s.steps} steps, {s.tool_calls} tool calls{speed}{drafts}")
            if s.message and s.status != "done":
                self._progress(s.message)
        self.stdout.flush()
