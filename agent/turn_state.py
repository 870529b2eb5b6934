"""What a turn keeps count of while it runs, and the limits that end it early.

(A turn and a step are defined at agent.loop.AgentConfig: a turn is one user message and all
the agent does for it, a step one model request.)
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from agent.events import FinishReason
from agent.toolcalls import ToolCall

__all__ = [
    "FORMAT_ERRORS_STOP_AT",
    "LOOP_NUDGE_AT",
    "LOOP_STOP_AT",
    "LoopGuard",
    "TurnState",
    "TurnStop",
]

LOOP_NUDGE_AT = 3
LOOP_STOP_AT = 5
FORMAT_ERRORS_STOP_AT = 3


class TurnStop(Exception):
    """Ends the turn with a named status, the TurnFinished reason (see agent.events)."""

    def __init__(self, reason: FinishReason, message: str) -> None:
        super().__init__(message)
        self.reason = reason


class LoopGuard:
    """Counts how many times in a row the same call (name and arguments) was made."""

    def __init__(self) -> None:
        self.last: str | None = None
        self.count = 0

    def record(self, call: ToolCall) -> int:
        signature = json.dumps([call.name, call.arguments], sort_keys=True)
        self.count = self.count + 1 if signature == self.last else 1
        self.last = signature
        return self.count


@dataclass
class TurnState:
    usage_before: dict[str, int]
    steps: int = 0
    # The text of the latest reply: the turn's answer once the model stops calling tools.
    final_text: str = ""
    answered: bool = False
    # A Stop hook kept this turn going once already (the SDK's stop_hook_active).
    stop_hooked: bool = False
    nudged_empty: bool = False
    format_errors: int = 0
    loop_guard: LoopGuard = field(default_factory=LoopGuard)
    # Calls of the last reply that have no result yet: each gets one before the turn ends.
    pending: list[ToolCall] = field(default_factory=list)

    def start_step(self, max_steps: int) -> None:
        if self.steps >= max_steps:
            raise TurnStop("max_turns", f"stopped after {self.steps} model steps (the step limit, agent.max_steps)")
        self.steps += 1

    def empty_reply(self, cut: bool) -> None:
        """An empty reply, or one cut off by the token limit before any text, is not an answer:
        the model is asked once more, then the turn stops with a status that says which it was."""
        if self.nudged_empty:
            raise TurnStop(
                "length" if cut else "empty_answer",
                "the model hit its token limit without answering (finish_reason=length); "
                "raise agent.max_tokens or the context size"
                if cut
                else "the model answered with nothing, twice",
            )
        self.nudged_empty = True

    def record_call(self, call: ToolCall) -> str:
        """Count the call; what to add to its result: a nudge once the same call keeps coming."""
        repeats = self.loop_guard.record(call)
        if repeats >= LOOP_NUDGE_AT and call.problem is None:
            return (
                f"\n\n[localagent] This exact call has now been made {repeats} times in a row and "
                "its result will not change. Do something different, or answer if you are done."
            )
        return ""

    def check_limits(self, call: ToolCall) -> None:
        """After the call's result is in the history: stop after too many malformed calls in a
        row, or the same call over and over."""
        self.format_errors = self.format_errors + 1 if call.problem is not None else 0
        if self.format_errors >= FORMAT_ERRORS_STOP_AT:
            raise TurnStop("format_errors", f"{self.format_errors} malformed tool calls in a row")
        if self.loop_guard.count >= LOOP_STOP_AT:
            raise TurnStop("loop", f"the same {call.name} call was repeated {self.loop_guard.count} times")
