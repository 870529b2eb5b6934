"""Rules and result shape shared by the tools that change files (create, edit, insert)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tools.base import ToolContext, ToolError, ToolResult
from tools.diffs import unified_diff


def require_viewed(ctx: ToolContext, path: Path, shown: str, tool_name: str) -> None:
    # Changing a file the model has not read leads to edits based on guesses.
    if not ctx.was_viewed(path):
        raise ToolError(f"{shown} has not been viewed in this session; view it first, then call {tool_name} again")


def change_result(
    summary: str,
    shown: str,
    old_text: str,
    new_text: str,
    *,
    is_new_file: bool = False,
    **extra: Any,
) -> ToolResult:
    diff = unified_diff(old_text, new_text, shown, is_new_file=is_new_file)
    metadata: dict[str, Any] = {"path": shown, "diff": diff, "files_changed": [shown], **extra}
    return ToolResult(output=summary, metadata=metadata)
