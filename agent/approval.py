"""Asking a person before a tool call runs, as a callback every front end supplies.

The loop calls ``approve(request)`` when the policy says ask and waits for the answer; the TUI
shows a modal, ACP asks the editor, the headless runner supplies none (then the policy's answer
is turned into a refusal that tells the model what would allow the call). The rule that
"allow always" adds is worked out once, in the request, so every front end shows and saves the
same rule the loop then allows.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal

Answer = Literal["once", "always", "deny"]
ANSWERS: tuple[Answer, ...] = ("once", "always", "deny")


@dataclass(frozen=True)
class ApprovalRequest:
    """One tool call a person must allow or deny, with what they need to decide."""

    call_id: str
    name: str
    summary: str
    arguments: dict[str, Any]
    reason: str
    diff: str | None
    # What "allow always" allows for the rest of the session (and what a front end may save).
    rule: str


@dataclass(frozen=True)
class Approval:
    """A person's (or a program's) answer. ``rule`` is the allow rule the session gains: set only
    by ``always``. An allowing answer may change the call's ``arguments`` (the policy judges the
    changed call again); a denying one may say why (``message``, for the model) and end the turn
    (``interrupt``)."""

    answer: Answer
    rule: str | None = None
    arguments: dict[str, Any] | None = None
    message: str | None = None
    interrupt: bool = False

    @classmethod
    def of(cls, answer: str, request: ApprovalRequest) -> Approval:
        """The approval an answer names ("once", "always", anything else denies)."""
        if answer == "always":
            return cls("always", request.rule)
        return cls("once") if answer == "once" else cls("deny")


Approve = Callable[[ApprovalRequest], Awaitable[Approval]]
