"""The `view` tool: show a text file with line numbers, or list a directory."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tools.base import ToolContext, ToolError, ToolResult
from tools.numbered_lines import format_numbered
from tools.path_tool import PathTool, path_property, resolve_path
from tools.text_files import TextFile, describe_stray_bytes, split_lines

DEFAULT_VIEW_LINES = 2000
MAX_LINE_CHARS = 2000
MAX_DIRECTORY_ENTRIES = 1000


class ViewTool(PathTool):
    name = "view"
    description = (
        "Read a text file from the workspace; lines are shown numbered like `cat -n` "
        "(number, tab, line). Shows up to 2000 lines at a time: use `offset` (1-based first "
        "line) and `limit` to page through longer files. Very long lines are truncated. "
        "Given a directory, lists its entries (directories end with /). A file must be viewed "
        "before edit, insert or create can change it. The line numbers are not part of the file: "
        "never copy them into old_string."
    )
    parameters = {
        "type": "object",
        "properties": {
            "path": path_property("File or directory"),
            "offset": {
                "type": "integer",
                "minimum": 1,
                "description": "1-based line to start from (default 1).",
            },
            "limit": {
                "type": "integer",
                "minimum": 1,
                "description": f"Number of lines to show (default and maximum {DEFAULT_VIEW_LINES}).",
            },
        },
        "required": ["path"],
        "additionalProperties": False,
    }
    reads_only = True

    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        path, shown = resolve_path(args["path"], ctx)
        if path.is_dir():
            return _list_directory(path, shown)
        document = TextFile.load(path, shown)
        ctx.mark_viewed(path)
        lines = split_lines(document.text)
        offset = int(args.get("offset", 1))
        limit = min(int(args.get("limit", DEFAULT_VIEW_LINES)), DEFAULT_VIEW_LINES)
        metadata: dict[str, Any] = {
            "path": shown,
            "total_lines": len(lines),
            "encoding": document.encoding,
            "stray_bytes": document.stray_bytes,
        }
        if not lines:
            return ToolResult(output=f"{shown} is empty (0 lines).", metadata=metadata)
        if offset > len(lines):
            raise ToolError(
                f"offset {offset} is past the end of {shown}, which has {len(lines)} lines; "
                f"use an offset from 1 to {len(lines)}"
            )
        chosen = lines[offset - 1 : offset - 1 + limit]
        long_lines = sum(1 for line in chosen if len(line) > MAX_LINE_CHARS)
        clipped = [_clip(line) for line in chosen]
        notes: list[str] = []
        last_shown = offset + len(chosen) - 1
        if offset > 1 or last_shown < len(lines):
            notes.append(f"[showing lines {offset}-{last_shown} of {len(lines)}]")
        if last_shown < len(lines):
            notes.append(f"[more below: view with offset={last_shown + 1} to continue]")
        if long_lines:
            notes.append(f"[{long_lines} line(s) longer than {MAX_LINE_CHARS} characters were truncated]")
        if document.stray_bytes:
            notes.append(describe_stray_bytes(document.stray_bytes))
        output = format_numbered(clipped, offset)
        if notes:
            output += "\n" + "\n".join(notes)
        metadata.update(first_line=offset, last_line=last_shown)
        return ToolResult(output=output, metadata=metadata)


def _clip(line: str) -> str:
    if len(line) <= MAX_LINE_CHARS:
        return line
    return f"{line[:MAX_LINE_CHARS]}… [line truncated, {len(line)} characters in total]"


def _list_directory(path: Path, shown: str) -> ToolResult:
    entries = []
    for child in path.iterdir():
        try:
            entries.append(child.name + "/" if child.is_dir() else child.name)
        except OSError:
            entries.append(child.name)
    entries.sort()
    total = len(entries)
    listed = entries[:MAX_DIRECTORY_ENTRIES]
    header = f"{shown if shown.endswith('/') else shown + '/'} ({total} entries)"
    body = "\n".join(listed) if listed else "(empty directory)"
    output = f"{header}\n{body}"
    if total > len(listed):
        output += f"\n[{total - len(listed)} more entries not shown; use glob to narrow down]"
    return ToolResult(output=output, metadata={"path": shown, "is_directory": True, "entries": total})
