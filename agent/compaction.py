"""Making room in a full context: old tool output goes first, then a summary of the past.

Compaction is the one place history is rewritten, so it is done rarely and all at once: the
prompt cache is lost once, not on every turn.
"""

from __future__ import annotations

from typing import Any, cast

from openai import AsyncOpenAI
from openai.types.chat import ChatCompletion

ELIDED = "[output removed to save context; run the tool again if you need it]"
KEEP_RECENT_TOOL_RESULTS = 2
SUMMARY_PROMPT = (
    "Summarise this conversation so far for your own later use: the user's goal, what was done, "
    "which files were changed and how, what failed, and what remains. Be concrete and brief."
)


class Compactor:
    def __init__(self, client: AsyncOpenAI, model: str, min_elide_chars: int = 300) -> None:
        self.client = client
        self.model = model
        self.min_elide_chars = min_elide_chars

    async def compact(self, messages: list[dict[str, Any]], aggressive: bool = False) -> list[dict[str, Any]]:
        trimmed = elide_old_tool_output(messages, self.min_elide_chars)
        if trimmed != messages and not aggressive:
            return trimmed
        _system, past, _current = split_current_turn(trimmed)
        if not past:
            # One long turn: nothing before it to summarise, so drop every bulky tool output.
            return elide_old_tool_output(trimmed, self.min_elide_chars, keep_recent=0)
        return await self.summarise(trimmed)

    async def summarise(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """System prompt + a summary of everything before the current turn + the current turn."""
        system, past, current = split_current_turn(messages)
        if not past:
            return messages
        response = await self.client.chat.completions.create(
            model=self.model,
            messages=[*system, *past, {"role": "user", "content": SUMMARY_PROMPT}],  # type: ignore[list-item]  # plain dicts, as the API takes them
            stream=False,
        )
        # stream=False: a whole completion, never a stream.
        summary = (cast("ChatCompletion", response).choices[0].message.content or "").strip() or "(no summary)"
        bridge = {"role": "user", "content": f"Summary of the conversation so far:\n{summary}"}
        ack = {"role": "assistant", "content": "Understood; continuing from that summary."}
        return [*system, bridge, ack, *current]


def elide_old_tool_output(
    messages: list[dict[str, Any]], min_chars: int = 300, keep_recent: int = KEEP_RECENT_TOOL_RESULTS
) -> list[dict[str, Any]]:
    tool_positions = [i for i, m in enumerate(messages) if m.get("role") == "tool"]
    old = set(tool_positions[: len(tool_positions) - keep_recent])
    result = []
    for i, message in enumerate(messages):
        content = message.get("content")
        if i in old and isinstance(content, str) and len(content) > min_chars and content != ELIDED:
            message = {**message, "content": ELIDED}
        result.append(message)
    return result


def split_current_turn(
    messages: list[dict[str, Any]],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    system = [m for m in messages[:1] if m.get("role") == "system"]
    rest = messages[len(system) :]
    last_user = max((i for i, m in enumerate(rest) if m.get("role") == "user"), default=0)
    return system, rest[:last_user], rest[last_user:]
