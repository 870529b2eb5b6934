"""The three request formats an agent speaks to a model server, told apart by the request's path:
Anthropic Messages (Claude Code), OpenAI Responses (Codex) and OpenAI Chat Completions (opencode).
Each has its own token-counting route on llama-server, which renders and tokenizes the prompt as
a generation would, without running the model."""

from __future__ import annotations

from typing import Literal

WireProtocol = Literal["anthropic", "responses", "chat"]

# llama-server's routes that count a request's prompt tokens (tools/server/server.cpp); each
# answers {"input_tokens": N}.
COUNT_PATHS: dict[WireProtocol, str] = {
    "anthropic": "/v1/messages/count_tokens",
    "responses": "/v1/responses/input_tokens",
    "chat": "/v1/chat/completions/input_tokens",
}

_GENERATION_SUFFIXES: tuple[tuple[str, WireProtocol], ...] = (
    ("/messages", "anthropic"),
    ("/responses", "responses"),
    ("/chat/completions", "chat"),
)


def generation_protocol(method: str, path: str) -> WireProtocol | None:
    """The protocol of a request that asks the model for an answer; None for anything else (a
    model list, a token count, a health check), which a meter passes on as it is.

    Claude Code adds a query (``/v1/messages?beta=true``), so the query is not part of the match."""
    if method != "POST":
        return None
    route = path.split("?", 1)[0].rstrip("/")
    for suffix, protocol in _GENERATION_SUFFIXES:
        if route.endswith(suffix):
            return protocol
    return None
