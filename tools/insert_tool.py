"""The `insert` tool: add lines after a given line of a file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tools.base import Tool, ToolContext, ToolError, ToolResult
from tools.file_changes import change_result, require_viewed
from tools.numbered_lines import snippet
from tools.text_files import TextFile, split_lines
from tools.workspace_paths import describe_path_arg, display_path, resolve_in_workspace


class InsertTool(Tool):
    name = "insert"
    description = (
        "Insert text as new lines after a given line of a file viewed in this session "
        "(line 0 inserts at the top; the file's line count appends at the end). Line numbers "
        "are the ones view shows. Line endings and encoding of the file are kept."
    )
    parameters = {
        "type": "object",
        "properties": {
            "path": {
                "type": "string",
                "description": "File to change, relative to the workspace (or absolute inside it).",
            },
            "line": {
                "type": "integer",
                "minimum": 0,
                "description": "Insert after this 1-based line; 0 inserts before the first line.",
            },
            "text": {"type": "string", "description": "The lines to insert."},
        },
        "required": ["path", "line", "text"],
        "additionalProperties": False,
    }
    reads_only = False

    def describe_call(self, args: dict[str, Any], workspace: Path | None = None) -> str:
        return describe_path_arg(args.get("path"), workspace) if isinstance(args, dict) else ""

    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        path = resolve_in_workspace(args["path"], ctx.workspace)
        shown = display_path(path, ctx.workspace)
        document = TextFile.load(path, shown)
        require_viewed(ctx, path, shown, "insert")
        after_line = int(args["line"])
        old_text = document.text
        lines = split_lines(old_text)
        if after_line > len(lines):
            raise ToolError(
                f"line {after_line} is past the end of {shown}, which has {len(lines)} lines; "
                f"use a line from 0 to {len(lines)}"
            )
        text = document.normalise_input(args["text"])
        # A final newline in `text` ends its last line rather than adding an empty one.
        new_lines = split_lines(text) if text else [""]
        combined = lines[:after_line] + new_lines + lines[after_line:]
        # An empty file gets the conventional final newline; otherwise keep what it had.
        ends_with_newline = old_text.endswith("\n") or not old_text
        new_text = "\n".join(combined) + ("\n" if ends_with_newline else "")
        ctx.preserve(document.path)
        document.write(new_text)

        first_new = after_line + 1
        last_new = after_line + len(new_lines)
        summary = (
            f"Inserted {len(new_lines)} line(s) into {shown} after line {after_line}:\n"
            f"{snippet(combined, first_new, last_new)}"
        )
        return change_result(summary, shown, old_text, new_text, inserted_lines=len(new_lines))
