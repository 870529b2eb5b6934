"""The per-token part of Claude Code's stream-json (``--include-partial-messages``): each model
request as the Anthropic Messages streaming events, message_start, content_block_start /
content_block_delta (text_delta, thinking_delta) / content_block_stop, message_delta,
message_stop. The complete assistant message follows them as usual.

Text and reasoning stream token by token; a native tool call streams as Claude Code streams one:
content_block_start with the tool_use block (its id and name, empty input), input_json_delta
events with the pieces of its arguments, content_block_stop. A call the model printed as text
streams as the text it is.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any, Literal

BlockKind = Literal["text", "thinking"]
OpenBlock = Literal["text", "thinking", "tool_use"]
_DELTA_TYPE = {"text": "text_delta", "thinking": "thinking_delta"}


def new_message_id() -> str:
    return f"msg_{uuid.uuid4().hex[:24]}"


@dataclass
class PartialMessage:
    """The streaming events of one model request, built as its deltas arrive."""

    model: str
    message_id: str = field(default_factory=new_message_id)
    started: bool = False
    _index: int = -1
    _open: OpenBlock | None = None
    # The reply's index of the tool call whose block is open, when one is.
    _open_call: int | None = None

    def delta(self, kind: BlockKind, text: str) -> list[dict[str, Any]]:
        """The events for one delta: the message's and a block's start when due, then the delta."""
        events = self._start()
        if self._open != kind:
            events.extend(self._stop_block())
            self._index += 1
            self._open = kind
            block = (
                {"type": "text", "text": ""}
                if kind == "text"
                else {"type": "thinking", "thinking": "", "signature": ""}
            )
            events.append({"type": "content_block_start", "index": self._index, "content_block": block})
        key = "text" if kind == "text" else "thinking"
        delta = {"type": _DELTA_TYPE[kind], key: text}
        events.append({"type": "content_block_delta", "index": self._index, "delta": delta})
        return events

    def tool_call_delta(self, call_index: int, call_id: str, name: str, arguments: str) -> list[dict[str, Any]]:
        """The events for a piece of a native tool call: its block's start when it is new, then
        the piece of its arguments (none for a piece that carries only the id or name)."""
        events = self._start()
        if self._open != "tool_use" or self._open_call != call_index:
            events.extend(self._stop_block())
            self._index += 1
            self._open, self._open_call = "tool_use", call_index
            block = {"type": "tool_use", "id": call_id, "name": name, "input": {}}
            events.append({"type": "content_block_start", "index": self._index, "content_block": block})
        if arguments:
            delta = {"type": "input_json_delta", "partial_json": arguments}
            events.append({"type": "content_block_delta", "index": self._index, "delta": delta})
        return events

    def _start(self) -> list[dict[str, Any]]:
        if self.started:
            return []
        self.started = True
        return [{"type": "message_start", "message": self._empty_message()}]

    def close(self, stop_reason: str | None, output_tokens: int) -> list[dict[str, Any]]:
        """The events that end the message; none when it never started."""
        if not self.started:
            return []
        events = self._stop_block()
        events.append(
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                "usage": {"output_tokens": output_tokens},
            }
        )
        events.append({"type": "message_stop"})
        self.started = False
        return events

    def _stop_block(self) -> list[dict[str, Any]]:
        if self._open is None:
            return []
        self._open, self._open_call = None, None
        return [{"type": "content_block_stop", "index": self._index}]

    def _empty_message(self) -> dict[str, Any]:
        return {
            "id": self.message_id,
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 0, "output_tokens": 0},
        }
