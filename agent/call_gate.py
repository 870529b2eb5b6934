"""Whether one tool call may run, and with which arguments: the hooks first, then the permission
policy, then (when the policy says ask) the front end's ``approve``."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, Protocol

from agent.approval import ApprovalRequest, Approve
from agent.event_stream import streamed
from agent.events import ApprovalRequested, Event
from agent.hooks import NO_VERDICT, AgentHooks
from agent.permissions import PermissionPolicy, resolve_without_person, rule_for_call
from agent.toolcalls import AgentTool, ToolCall
from agent.turn_state import TurnStop
from tools.base import ToolContext

DENIED = "The user denied this call. Do not retry it; ask or try another way."


@dataclass(frozen=True)
class Verdict:
    """``refusal`` None: the call runs, with ``arguments``; else the reason it may not, for the model."""

    refusal: str | None
    arguments: dict[str, Any]


class GateHost(Protocol):
    policy: PermissionPolicy
    approve: Approve | None
    hooks: AgentHooks | None
    tool_ctx: ToolContext

    def emit(self, event: Event) -> Event: ...


@streamed
async def judge_call(host: GateHost, call: ToolCall, tool: AgentTool, summary: str) -> AsyncIterator[Event | Verdict]:
    arguments = call.arguments or {}
    hooked = NO_VERDICT if host.hooks is None else await host.hooks.before_call(call.id, call.name, arguments)
    if hooked.stop:
        raise TurnStop("denied", hooked.reason or "a hook stopped the turn")
    if hooked.decision == "deny":
        yield Verdict(f"Blocked by a hook: {hooked.reason or 'no reason given'}", arguments)
        return
    if hooked.arguments is not None:
        arguments = hooked.arguments
        summary = tool.describe_call(arguments, host.tool_ctx.workspace)
    decision = host.policy.decide(
        tool.name, tool.reads_only, summary, workspace=host.tool_ctx.workspace, arguments=arguments
    )
    if decision.action == "ask" and hooked.decision == "allow":
        yield Verdict(None, arguments)  # the hook answered what a person would have been asked
        return
    if decision.action == "ask" and host.approve is None:
        decision = resolve_without_person(decision)
    if decision.action == "deny":
        yield Verdict(f"Not allowed: {decision.reason}", arguments)
        return
    if decision.action == "ask" and host.approve is not None:
        request = ApprovalRequest(
            call.id,
            call.name,
            summary,
            arguments,
            decision.reason,
            tool.preview(arguments, host.tool_ctx),
            rule_for_call(tool.name, summary),
        )
        yield host.emit(ApprovalRequested(**vars(request)))
        approval = await host.approve(request)
        if approval.rule is not None:
            host.policy.add_rule("allow", approval.rule)
        if approval.answer == "deny":
            if approval.interrupt:
                raise TurnStop("denied", approval.message or "the user denied a call and stopped the turn")
            yield Verdict(approval.message or DENIED, arguments)
            return
        if approval.arguments is not None and approval.arguments != arguments:
            # The changed call is judged again: an answer about one call allows no other the
            # rules deny. What would ask was just answered by the one who changed it.
            changed = tool.describe_call(approval.arguments, host.tool_ctx.workspace)
            again = host.policy.decide(
                tool.name, tool.reads_only, changed, workspace=host.tool_ctx.workspace, arguments=approval.arguments
            )
            if again.action == "deny":
                yield Verdict(f"Not allowed: {again.reason}", arguments)
                return
            arguments = approval.arguments
    yield Verdict(None, arguments)
