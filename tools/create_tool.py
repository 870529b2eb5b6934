"""The `create` tool: write a whole file, creating parent directories as needed."""

from __future__ import annotations

from typing import Any

from tools.base import ToolContext, ToolError, ToolResult
from tools.file_changes import FileChange, FileChangeTool, require_viewed
from tools.path_tool import path_property, resolve_path
from tools.text_files import TextFile, split_lines


class CreateTool(FileChangeTool):
    name = "create"
    description = (
        "Create a file with the given content (parent directories are created). An existing "
        "file is overwritten only if it was viewed in this session; for changes to part of a "
        "file prefer edit or insert."
    )
    parameters = {
        "type": "object",
        "properties": {
            "path": path_property("File to write"),
            "content": {"type": "string", "description": "The complete new content of the file."},
        },
        "required": ["path", "content"],
        "additionalProperties": False,
    }
    reads_only = False

    def plan(self, args: dict[str, Any], ctx: ToolContext) -> FileChange:
        path, shown = resolve_path(args["path"], ctx)
        if path.is_dir():
            raise ToolError(f"{shown} is a directory; give a file path to create")
        existed = path.exists()
        old_text = ""
        if existed:
            require_viewed(ctx, path, shown, "create (or use edit for a targeted change)")
            old_text = TextFile.load(path, shown).text
        return FileChange(path=path, shown=shown, old_text=old_text, new_text=args["content"], is_new_file=not existed)

    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        change = self.plan(args, ctx)
        ctx.preserve(change.path)
        change.path.parent.mkdir(parents=True, exist_ok=True)
        # Written as the model sent it: UTF-8, with its line endings.
        change.path.write_bytes(change.new_text.encode("utf-8"))
        # The model wrote every byte of it, so it counts as viewed for later edits.
        ctx.mark_viewed(change.path)
        line_count = len(split_lines(change.new_text))
        verb = "Created" if change.is_new_file else "Overwrote"
        return change.result(f"{verb} {change.shown} ({line_count} lines).", created=change.is_new_file)
