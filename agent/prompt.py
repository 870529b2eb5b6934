"""The system prompt and the session's context.

The system prompt is the same for every repository and every session, and the tool schemas
follow it (both chat templates localagent uses, ChatML with tools and Gemma 4's, render the
system message and then the tool declarations in one system turn). What differs between
sessions (the workspace's path, its AGENTS.md files) goes at the head of the first user message,
after that shared prefix: a new session anywhere reuses the server's cached instructions and
tool schemas. Neither changes after the session starts: any byte that changed between turns
would throw away the server's cached prefix.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

BASE_PROMPT = """You are localagent, a coding agent working in a repository; where it is, and its
own instructions, come in a <context> block with the first message.
You act through tools: bash runs shell commands in the workspace; view reads a file (always view a
file before you edit it); create writes a new file; edit replaces one exact, unique piece of text;
insert adds lines after a line number; grep and glob search the workspace.
Work in small verified steps: read the code, change it, run the tests, fix what fails. Keep
answers short. When the task is done, reply with a brief summary and no tool call.
Call tools with the native tool-calling format. If you cannot, write exactly one call as
<tool_call>{"name": "TOOL", "arguments": {...}}</tool_call>."""

INSTRUCTIONS_HEADER = """# Instructions
From AGENTS.md files: the user's own first (if any), then the repository's from its root down to
the working directory. Follow them; where two disagree, the later, more specific one wins."""

CONTEXT_OPEN, CONTEXT_CLOSE = "<context>", "</context>"


def system_prompt() -> str:
    """The fixed instructions: the same bytes in every repository and session."""
    return BASE_PROMPT


def session_context(workspace: Path, instructions: str = "") -> str:
    """What this session has of its own: the workspace, then the instructions
    (``agent.instructions.load_instructions``) if any."""
    text = f"{CONTEXT_OPEN}\nThe repository is at {workspace}."
    if instructions.strip():
        text += "\n\n" + INSTRUCTIONS_HEADER + "\n\n" + instructions.strip()
    return text + "\n" + CONTEXT_CLOSE


def with_context(messages: list[dict[str, Any]], context: str) -> list[dict[str, Any]]:
    """``messages`` with the session's context at the head of the first user message (after the
    system prompt), where it is not already: a new conversation, or one that compaction or
    /clear rewrote."""
    if not context:
        return messages
    for index, message in enumerate(messages):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str) and not content.startswith(context):
            return [*messages[:index], {**message, "content": f"{context}\n\n{content}"}, *messages[index + 1 :]]
        return messages
    return messages


def place_context(
    messages: list[dict[str, Any]], asked: dict[str, Any], context: str
) -> tuple[list[dict[str, Any]] | None, dict[str, Any]]:
    """Where the context goes as the person asks ``asked``: on it, when the conversation has no
    user message yet; else on the first one, where a session saved before the context moved
    there lacks it (then the rewritten history comes back too, else None)."""
    if not any(message.get("role") == "user" for message in messages):
        return None, with_context([asked], context)[0]
    rewritten = with_context(messages, context)
    return (rewritten if rewritten is not messages else None), asked


def without_context(text: str) -> str:
    """A user message as the person wrote it, without the session's context at its head. The
    last end mark counts: an AGENTS.md that writes one cannot cut the context short."""
    if text.startswith(CONTEXT_OPEN):
        _, mark, rest = text.rpartition("\n" + CONTEXT_CLOSE + "\n\n")
        return rest if mark else text
    return text
