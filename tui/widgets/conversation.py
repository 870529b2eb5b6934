"""The scrolling conversation: user and assistant messages, reasoning, tool calls and notes.

It stays anchored to the bottom while output streams, until the user scrolls up to read.
"""

from __future__ import annotations

import json
from typing import Any

from textual.containers import VerticalScroll
from textual.widget import Widget

from tui.attachments import typed_part
from tui.widgets.assistant_message import AssistantMessage
from tui.widgets.notice_line import Kind, NoticeLine
from tui.widgets.reasoning_block import ReasoningBlock
from tui.widgets.tool_call_block import ToolCallBlock
from tui.widgets.user_message import UserMessage


class Conversation(VerticalScroll, can_focus=False):
    DEFAULT_CSS = """
    Conversation {
        height: 1fr;
        padding: 0 1 1 1;
        scrollbar-size-vertical: 1;
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.assistant: AssistantMessage | None = None
        self.reasoning: ReasoningBlock | None = None
        self.tool_blocks: dict[str, ToolCallBlock] = {}

    def on_mount(self) -> None:
        self.anchor()

    async def add(self, widget: Widget) -> Widget:
        await self.mount(widget)
        return widget

    async def add_user(self, text: str) -> UserMessage:
        await self.end_assistant()
        message = UserMessage(text)
        await self.mount(message)
        self.anchor()  # a new prompt brings the view back to the bottom
        return message

    async def add_notice(self, text: str, kind: Kind = "info") -> NoticeLine:
        line = NoticeLine(text, kind)
        await self.mount(line)
        return line

    async def write_text(self, fragment: str) -> None:
        if self.reasoning is not None:
            self.reasoning.finish()
            self.reasoning = None
        if self.assistant is None:
            self.assistant = AssistantMessage()
            await self.mount(self.assistant)
        await self.assistant.write(fragment)

    async def write_reasoning(self, fragment: str) -> None:
        if self.reasoning is None:
            await self.end_assistant()
            self.reasoning = ReasoningBlock()
            await self.mount(self.reasoning)
        self.reasoning.append(fragment)

    async def end_assistant(self) -> None:
        """The model's message is complete: the next text starts a new block below."""
        if self.reasoning is not None:
            self.reasoning.finish()
            self.reasoning = None
        if self.assistant is not None:
            assistant, self.assistant = self.assistant, None
            await assistant.finish()

    async def start_tool(self, call_id: str, name: str, summary: str, arguments: dict) -> ToolCallBlock:
        await self.end_assistant()
        block = ToolCallBlock(call_id, name, summary, arguments)
        self.tool_blocks[call_id] = block
        await self.mount(block)
        return block

    async def tool_block(self, call_id: str, name: str) -> ToolCallBlock:
        """The block of a call; one is made for calls that finished without starting (bad calls)."""
        block = self.tool_blocks.get(call_id)
        if block is None:
            block = await self.start_tool(call_id, name, "", {})
        return block

    async def clear(self) -> None:
        await self.end_assistant()
        self.tool_blocks.clear()
        await self.remove_children()

    async def replay(self, messages: list[dict[str, Any]]) -> list[str]:
        """Show a conversation so far (a resumed session); returns the user's prompts in it."""
        prompts: list[str] = []
        for message in messages:
            role, content = message.get("role"), message.get("content")
            if role == "user" and isinstance(content, str):
                typed = typed_part(content)  # without the files and shell output it carried
                prompts.append(typed)
                await self.add_user(typed)
            elif role == "assistant":
                if content:
                    await self.add(AssistantMessage(str(content)))
                for call in message.get("tool_calls") or []:
                    function = call.get("function", {})
                    try:
                        arguments = json.loads(function.get("arguments") or "{}")
                    except ValueError:
                        arguments = {}
                    await self.start_tool(call.get("id", ""), function.get("name", "?"), "", arguments)
            elif role == "tool":
                block = self.tool_blocks.get(message.get("tool_call_id", ""))
                if block is not None:
                    text = str(content or "")
                    await block.finish(text, text.startswith("Error"), None)
        return prompts
