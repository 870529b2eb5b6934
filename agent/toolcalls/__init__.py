"""The tools as the agent sees them and the calls the model makes to them: read from the reply
(native, or printed as text in one of the forms local models use), checked against the tool's
schema, and written back into the history."""

from agent.toolcalls.calls import AgentTool, ToolCall, assistant_message, calls_in_reply, tool_message
from agent.toolcalls.text import format_error_feedback, parse_text_tool_calls

__all__ = [
    "AgentTool",
    "ToolCall",
    "assistant_message",
    "calls_in_reply",
    "format_error_feedback",
    "parse_text_tool_calls",
    "tool_message",
]
