"""`localagent run`: a consumer of the event stream that never waits for a person.

Final answer on stdout, progress on stderr. Exit codes: 0 done, 1 error, 2 bad input or
configuration (raised before the run), 3 turn or time limit. With ``--output-format json`` or
``stream-json`` stdout carries Claude Code's headless schema instead (localagent.stream_json).
"""

from __future__ import annotations

import asyncio
import sys
import time
from typing import Literal, TextIO

from agent.events import (
    ErrorEvent,
    Event,
    Metrics,
    Notice,
    SpeculationChosen,
    ToolCallFinished,
    ToolCallStarted,
    TurnFinished,
    TurnStarted,
)
from agent.loop import Agent
from agent.request_totals import RequestTotals
from localagent.run_summary import EXIT_CODES, RunSummary, stop_message
from localagent.stream_json import ClaudeStream, SessionInfo
from tools.terminal_text import terminal_safe

__all__ = ["EXIT_CODES", "HeadlessRunner", "OutputFormat", "RunSummary", "mode_hint", "stop_message"]

OutputFormat = Literal["text", "json", "stream-json"]


def mode_hint(mode: str) -> str:
    """How a person running headless picks a permission mode (for the policy's remedies)."""
    return f"--mode {mode}"


class HeadlessRunner:
    def __init__(
        self,
        agent: Agent,
        output: OutputFormat = "text",
        stdout: TextIO = sys.stdout,
        stderr: TextIO = sys.stderr,
        *,
        info: SessionInfo | None = None,
        partial: bool = False,
    ) -> None:
        """``info`` is what the stream-json init message says (by default, what ``agent`` knows);
        ``partial`` adds the per-token stream events (``--include-partial-messages``)."""
        self.agent = agent
        self.output = output
        self.stdout = stdout
        self.stderr = stderr
        self.summary = RunSummary()
        self._changed: set[str] = set()
        self._totals = RequestTotals()
        self._last_metrics: Metrics | None = None
        self.claude: ClaudeStream | None = None
        if output != "text":
            workspace, model = str(agent.tool_ctx.workspace), agent.config.model
            info = info or SessionInfo(None, workspace, model, list(agent.tools), mode=str(agent.policy.mode))
            self.claude = ClaudeStream(info, stdout, lines=output == "stream-json", partial=partial)

    async def run(self, task: str, timeout: float | None = None) -> RunSummary:
        started = time.monotonic()
        if self.claude is not None:
            self.summary.session_id = self.summary.session_id or self.claude.info.session_id
            self.claude.init()
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
        if self.claude is not None:
            self.claude.on_event(event)
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
        elif isinstance(event, SpeculationChosen):
            self.summary.speculation = event.reason
            self.summary.requests_without_drafts += event.n_max == 0
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
            # Tool summaries, notices and errors carry the model's and the tools' words.
            self.stderr.write(terminal_safe(line) + "\n")
            self.stderr.flush()

    def _finish(self) -> None:
        s = self.summary
        if self.claude is not None:
            self.claude.finish(s)
        else:
            if s.final_text:
                self.stdout.write(terminal_safe(s.final_text.rstrip()) + "\n")
            speed = f", {s.tokens_per_second:.1f} tok/s" if s.tokens_per_second else ""
            drafts = f", draft acceptance {s.acceptance:.0%}" if s.acceptance is not None else ""
            self._progress(f"[{s.status}] {s.steps} steps, {s.tool_calls} tool calls{speed}{drafts}")
            if s.message and s.status != "done":
                self._progress(s.message)
        self.stdout.flush()
