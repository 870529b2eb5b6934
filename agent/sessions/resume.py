"""Rebuilding a conversation from its session file's events, to resume it.

The loop persists every message it appends (MessageAppended) and every rewrite of the history
by compaction (HistoryReplaced); replaying those in order gives the history as it was. The
system prompt is not among them: the agent rebuilds it, byte-identical, on every start.
"""

from __future__ import annotations

from typing import Any

from agent.events import HistoryReplaced, MessageAppended

__all__ = ["INTERRUPTED_RESULT", "messages_from_events", "repair_interrupted_calls"]

INTERRUPTED_RESULT = "Error: interrupted: the run ended before this call finished; its effects are unknown."


def messages_from_events(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The conversation as it was: appended messages, with compactions applied in order, and
    repaired where the run was killed mid-call (see ``repair_interrupted_calls``)."""
    messages: list[dict[str, Any]] = []
    for event in events:
        if event.get("type") == MessageAppended.type:
            messages.append(event["message"])
        elif event.get("type") == HistoryReplaced.type:
            messages = list(event["messages"])
    return repair_interrupted_calls(messages)


def repair_interrupted_calls(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """After SIGKILL or a crash the history can end in (or hold) an assistant tool call with no
    tool result; a server rejects or misreads that. Each such call gets an "interrupted" result
    right after its assistant message, in call order."""
    repaired: list[dict[str, Any]] = []
    index = 0
    while index < len(messages):
        message = messages[index]
        repaired.append(message)
        index += 1
        calls = message.get("tool_calls") if message.get("role") == "assistant" else None
        if not calls:
            continue
        answered: set[str] = set()
        while index < len(messages) and messages[index].get("role") == "tool":
            answered.add(str(messages[index].get("tool_call_id")))
            repaired.append(messages[index])
            index += 1
        for call in calls:
            if str(call.get("id")) not in answered:
                repaired.append({"role": "tool", "tool_call_id": call.get("id"), "content": INTERRUPTED_RESULT})
    return repaired
