"""Hooks a front end may set on the agent, called at four points of a turn: before a prompt is
taken, before and after each tool call, and when the model is about to stop.

The Claude Agent SDK's hooks (``PreToolUse``, ``PostToolUse``, ``UserPromptSubmit``, ``Stop``)
arrive this way (localagent.sdk_hooks); the core knows only this protocol.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Protocol


@dataclass(frozen=True)
class HookVerdict:
    """What a hook decided. ``deny`` refuses (a call, or a prompt) with ``reason``; ``allow`` lets
    a call run without asking a person (a deny rule still wins); ``arguments`` replaces a call's
    input; ``context`` is added for the model."""

    decision: Literal["none", "allow", "deny"] = "none"
    reason: str = ""
    arguments: dict[str, Any] | None = None
    context: str = ""
    # End the turn here (the SDK's "continue": false), with ``reason`` as why.
    stop: bool = False


NO_VERDICT = HookVerdict()


class AgentHooks(Protocol):
    async def before_prompt(self, text: str) -> HookVerdict: ...

    async def before_call(self, call_id: str, name: str, arguments: dict[str, Any]) -> HookVerdict: ...

    async def after_call(
        self, call_id: str, name: str, arguments: dict[str, Any], output: str, is_error: bool
    ) -> HookVerdict: ...

    async def at_stop(self, final_text: str, again: bool) -> HookVerdict:
        """``deny`` keeps the turn going, with ``reason`` as the next instruction."""
        ...
