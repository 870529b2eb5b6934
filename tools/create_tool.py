"""The `create` tool: write a whole file, creating parent directories as needed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tools.base import Tool, ToolContext, ToolError, ToolResult
from tools.file_changes import change_result, require_viewed
from tools.text_files import TextFile, split_lines
from tools.workspace_paths import describe_path_arg, display_path, resolve_in_workspace


class CreateTool(Tool):
    name = "create"
    description = (
        "Create a file with the given content (parent directories are created). An existing "
        "file is overwritten only if it was viewed in this session; for changes to part of a "
        "file prefer edit or insert."
    )
    parameters = {
        "type": "object",
        "properties": {
            "path": {
                "type": "string",
                "description": "File to write, relative to the workspace (or absolute inside it).",
            },
            "content": {"type": "string", "description": "The complete new content of the file."},
        },
        "required": ["path", "content"],
        "additionalProperties": False,
    }
    reads_only = False

    def describe_call(self, args: dict[str, Any], workspace: Path | None = None) -> str:
        return describe_path_arg(args.get("path"), workspace) if isinstance(args, dict) else ""

    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        path = resolve_in_workspace(args["path"], ctx.workspace)
        shown = display_path(path, ctx.workspace)
        content: str = args["content"]
        if path.is_dir():
            raise ToolError(f"{shown} is a directory; give a file path to create")
        existed = path.exists()
        old_text = ""
        if existed:
            require_viewed(ctx, path, shown, "create (or use edit for a targeted change)")
            old_text = TextFile.load(path, shown).text
        ctx.preserve(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content.encode("utf-8"))
        # The model wrote every byte of it, so it counts as viewed for later edits.
        ctx.mark_viewed(path)
        line_count = len(split_lines(content))
        verb = "Overwrote" if existed else "Created"
        return change_result(
            f"{verb} {shown} ({line_count} lines).",
            shown,
            old_text,
            content,
            is_new_file=not existed,
            created=not existed,
        )
