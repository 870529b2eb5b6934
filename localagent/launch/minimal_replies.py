"""The shortest valid answer in each protocol: one short assistant text, whole or streamed as the
request asked. A meter that only measures answers with it, so the server spends no prefill or
decoding on a request it only wanted to count, and the agent, satisfied, ends its turn."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from localagent.launch.wire_protocols import WireProtocol

REPLY_TEXT = "Hello."
# One token for the text is enough for an agent's bookkeeping; nobody bills it.
_OUTPUT_TOKENS = 1


@dataclass(frozen=True)
class Reply:
    content_type: str
    body: bytes


def request_problem(protocol: WireProtocol, request: dict[str, Any]) -> str | None:
    """What in ``request`` keeps it from being answered, in one line (the meter answers it 400);
    None when nothing does. Only what ``minimal_reply`` reads is checked: the server checks the rest."""
    options = request.get("stream_options")
    if protocol == "chat" and options is not None and not isinstance(options, dict):
        return f"stream_options must be an object, not {type(options).__name__}"
    return None


def minimal_reply(protocol: WireProtocol, request: dict[str, Any], prompt_tokens: int) -> Reply:
    """The answer to ``request`` saying ``REPLY_TEXT``, with ``prompt_tokens`` as its usage
    (``request_problem`` found nothing in it)."""
    model = str(request.get("model") or "local")
    stream = request.get("stream") is True
    if protocol == "anthropic":
        if stream:
            return _sse(_anthropic_events(model, prompt_tokens))
        return _json(_anthropic_message(model, prompt_tokens))
    if protocol == "responses":
        events = _responses_events(model, prompt_tokens)
        return _sse(events) if stream else _json(events[-1][1]["response"])
    if stream:
        options = request.get("stream_options")
        wants_usage = isinstance(options, dict) and options.get("include_usage") is True
        return _chat_stream(model, prompt_tokens, wants_usage)
    return _json(_chat_completion(model, prompt_tokens))


def _json(payload: dict[str, Any]) -> Reply:
    return Reply("application/json", json.dumps(payload).encode())


def _sse(events: list[tuple[str, dict[str, Any]]]) -> Reply:
    text = "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events)
    return Reply("text/event-stream", text.encode())


def _anthropic_message(model: str, prompt_tokens: int) -> dict[str, Any]:
    return {
        "id": "msg_localagent_meter",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": REPLY_TEXT}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": prompt_tokens, "output_tokens": _OUTPUT_TOKENS},
    }


def _anthropic_events(model: str, prompt_tokens: int) -> list[tuple[str, dict[str, Any]]]:
    start = _anthropic_message(model, prompt_tokens) | {"content": [], "stop_reason": None}
    start["usage"] = {"input_tokens": prompt_tokens, "output_tokens": 0}
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": start},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": REPLY_TEXT}},
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn", "stop_sequence": None},
            "usage": {"output_tokens": _OUTPUT_TOKENS},
        },
        {"type": "message_stop"},
    ]
    return [(event["type"], event) for event in events]


def _responses_events(model: str, prompt_tokens: int) -> list[tuple[str, dict[str, Any]]]:
    """Responses' stream, from response.created to response.completed (whose response is also
    the whole answer)."""
    part = {"type": "output_text", "text": REPLY_TEXT, "annotations": []}
    item = {"type": "message", "id": "msg_localagent_meter", "status": "completed", "role": "assistant"}
    response = {"id": "resp_localagent_meter", "object": "response", "created_at": int(time.time()), "model": model}
    usage = {"input_tokens": prompt_tokens, "output_tokens": _OUTPUT_TOKENS, "total_tokens": prompt_tokens + 1}
    where = {"item_id": item["id"], "output_index": 0, "content_index": 0}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": response | {"status": "in_progress", "output": []}},
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": item | {"status": "in_progress", "content": []},
        },
        {"type": "response.content_part.added", **where, "part": part | {"text": ""}},
        {"type": "response.output_text.delta", **where, "delta": REPLY_TEXT},
        {"type": "response.output_text.done", **where, "text": REPLY_TEXT},
        {"type": "response.content_part.done", **where, "part": part},
        {"type": "response.output_item.done", "output_index": 0, "item": item | {"content": [part]}},
        {
            "type": "response.completed",
            "response": response | {"status": "completed", "output": [item | {"content": [part]}], "usage": usage},
        },
    ]
    return [(event["type"], event | {"sequence_number": number}) for number, event in enumerate(events)]


def _chat_completion(model: str, prompt_tokens: int) -> dict[str, Any]:
    return {
        "id": "chatcmpl-localagent-meter",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": REPLY_TEXT}, "finish_reason": "stop"}],
        "usage": _chat_usage(prompt_tokens),
    }


def _chat_stream(model: str, prompt_tokens: int, wants_usage: bool) -> Reply:
    head = {"id": "chatcmpl-localagent-meter", "object": "chat.completion.chunk", "created": int(time.time())}
    head["model"] = model
    text_delta = {"role": "assistant", "content": REPLY_TEXT}
    chunks = [
        head | {"choices": [{"index": 0, "delta": text_delta, "finish_reason": None}]},
        head | {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    ]
    if wants_usage:
        # As OpenAI sends it: a last chunk with no choices and the usage.
        chunks.append(head | {"choices": [], "usage": _chat_usage(prompt_tokens)})
    text = "".join(f"data: {json.dumps(chunk)}\n\n" for chunk in chunks) + "data: [DONE]\n\n"
    return Reply("text/event-stream", text.encode())


def _chat_usage(prompt_tokens: int) -> dict[str, int]:
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": _OUTPUT_TOKENS,
        "total_tokens": prompt_tokens + _OUTPUT_TOKENS,
    }
