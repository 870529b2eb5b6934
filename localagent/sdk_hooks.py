"""The Claude Agent SDK's hooks as the agent's (agent.hooks): registered at ``initialize``, called
through ``hook_callback`` control requests, their decisions honoured.

Served: ``UserPromptSubmit`` (block the prompt, or add context), ``PreToolUse`` (deny, allow
without asking, or change the input), ``PostToolUse`` (a reason or context for the model) and
``Stop`` (block: the turn goes on with the reason as the next instruction). A matcher is a
regular expression on the tool's name, ours (``bash``) or Claude Code's (``Bash``). A callback
that fails blocks when its matcher says ``onFailure`` other than "continue", as Claude Code does.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from agent.hooks import NO_VERDICT, HookVerdict

Ask = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]
SERVED = ("UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop")
# Claude Code's name for each built-in tool, for matchers written against it.
CLAUDE_NAMES = {
    "bash": "Bash",
    "view": "Read",
    "create": "Write",
    "edit": "Edit",
    "insert": "Edit",
    "grep": "Grep",
    "glob": "Glob",
}


@dataclass(frozen=True)
class Matcher:
    pattern: str | None
    callback_ids: tuple[str, ...]
    blocks_on_failure: bool

    def matches(self, tool: str | None) -> bool:
        if tool is None or self.pattern in (None, "", "*"):
            return True
        names = (tool, CLAUDE_NAMES.get(tool, tool))
        try:
            return any(re.fullmatch(self.pattern, name) for name in names)
        except re.error:
            return self.pattern in names


@dataclass
class SdkHooks:
    ask: Ask
    base: Callable[[], dict[str, Any]]  # session_id, cwd, permission_mode, transcript_path
    matchers: dict[str, list[Matcher]] = field(default_factory=dict)

    @staticmethod
    def unserved(config: dict[str, Any]) -> list[str]:
        return sorted(event for event, entries in config.items() if entries and event not in SERVED)

    def register(self, config: dict[str, Any]) -> None:
        for event, entries in config.items():
            self.matchers[event] = [
                Matcher(
                    entry.get("matcher"),
                    tuple(entry.get("hookCallbackIds") or ()),
                    entry.get("onFailure") not in (None, "continue"),
                )
                for entry in entries or []
            ]

    # -- agent.hooks.AgentHooks ------------------------------------------------------------

    async def before_prompt(self, text: str) -> HookVerdict:
        outputs = await self._call("UserPromptSubmit", {"prompt": text})
        return _verdict(outputs)

    async def before_call(self, call_id: str, name: str, arguments: dict[str, Any]) -> HookVerdict:
        fields = {"tool_name": name, "tool_input": arguments, "tool_use_id": call_id}
        outputs = await self._call("PreToolUse", fields, tool=name, tool_use_id=call_id)
        return _verdict(outputs)

    async def after_call(
        self, call_id: str, name: str, arguments: dict[str, Any], output: str, is_error: bool
    ) -> HookVerdict:
        fields = {"tool_name": name, "tool_input": arguments, "tool_response": output, "tool_use_id": call_id}
        outputs = await self._call("PostToolUse", fields, tool=name, tool_use_id=call_id)
        return _verdict(outputs)

    async def at_stop(self, final_text: str, again: bool) -> HookVerdict:
        outputs = await self._call("Stop", {"stop_hook_active": again, "last_assistant_message": final_text})
        return _verdict(outputs)

    # -- calling ---------------------------------------------------------------------------

    async def _call(
        self, event: str, fields: dict[str, Any], *, tool: str | None = None, tool_use_id: str | None = None
    ) -> list[dict[str, Any]]:
        outputs: list[dict[str, Any]] = []
        for matcher in self.matchers.get(event, []):
            if not matcher.matches(tool):
                continue
            for callback_id in matcher.callback_ids:
                hook_input = {**self.base(), "hook_event_name": event, **fields}
                body = {"subtype": "hook_callback", "callback_id": callback_id, "input": hook_input}
                response = await self.ask({**body, "tool_use_id": tool_use_id})
                if response.get("subtype") == "success":
                    outputs.append(response.get("response") or {})
                elif matcher.blocks_on_failure:
                    error = response.get("error", "no answer")
                    outputs.append({"decision": "block", "reason": f"a hook failed ({error})"})
        return outputs


def _verdict(outputs: list[dict[str, Any]]) -> HookVerdict:
    """One verdict from every callback's output: a block or deny wins, then an allow."""
    if not outputs:
        return NO_VERDICT
    decision: str = "none"
    reasons: list[str] = []
    contexts: list[str] = []
    arguments: dict[str, Any] | None = None
    stop = False
    for output in outputs:
        if not isinstance(output, dict):
            continue
        specific = output.get("hookSpecificOutput")
        specific = specific if isinstance(specific, dict) else {}
        said = specific.get("permissionDecision")
        blocked = output.get("decision") == "block" or said == "deny"
        reason = specific.get("permissionDecisionReason") or output.get("reason") or output.get("stopReason")
        if output.get("continue") is False:
            stop = True
            reasons.append(str(output.get("stopReason") or reason or "a hook stopped the turn"))
        elif blocked:
            decision = "deny"
            reasons.append(str(reason or "a hook blocked it"))
        elif said == "allow" and decision == "none":
            decision = "allow"
        if isinstance(specific.get("updatedInput"), dict):
            arguments = specific["updatedInput"]
        if specific.get("additionalContext"):
            contexts.append(str(specific["additionalContext"]))
    return HookVerdict(decision, "; ".join(reasons), arguments, "\n".join(contexts), stop)  # type: ignore[arg-type]
