"""The `insert` tool: add lines after a given line of a file."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tools.base import ToolContext, ToolError, ToolResult
from tools.file_changes import FileChange, FileChangeTool, require_viewed
from tools.numbered_lines import snippet
from tools.path_tool import path_property, resolve_path
from tools.text_files import TextFile, split_lines


@dataclass(frozen=True)
class Insertion:
    new_text: str
    lines: list[str]  # every line of the new text
    inserted: int  # how many of them are new


@dataclass(frozen=True, kw_only=True)
class Insert(FileChange):
    document: TextFile
    after_line: int
    insertion: Insertion


def insert_lines(old_text: str, after_line: int, text: str, shown: str) -> Insertion:
    """`old_text` with the lines of `text` after line `after_line` (0: before the first);
    ToolError when the text has no such line."""
    lines = split_lines(old_text)
    if after_line > len(lines):
        raise ToolError(
            f"line {after_line} is past the end of {shown}, which has {len(lines)} lines; "
            f"use a line from 0 to {len(lines)}"
        )
    # A final newline in `text` ends its last line rather than adding an empty one.
    new_lines = split_lines(text) if text else [""]
    combined = lines[:after_line] + new_lines + lines[after_line:]
    # An empty file gets the conventional final newline; otherwise keep what it had.
    ends_with_newline = old_text.endswith("\n") or not old_text
    new_text = "\n".join(combined) + ("\n" if ends_with_newline else "")
    return Insertion(new_text, combined, len(new_lines))


class InsertTool(FileChangeTool):
    name = "insert"
    description = (
        "Insert text as new lines after a given line of a file viewed in this session "
        "(line 0 inserts at the top; the file's line count appends at the end). Line numbers "
        "are the ones view shows. Line endings and encoding of the file are kept."
    )
    parameters = {
        "type": "object",
        "properties": {
            "path": path_property("File to change"),
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

    def plan(self, args: dict[str, Any], ctx: ToolContext) -> Insert:
        path, shown = resolve_path(args["path"], ctx)
        document = TextFile.load(path, shown)
        require_viewed(ctx, path, shown, "insert")
        after_line = int(args["line"])
        insertion = insert_lines(document.text, after_line, document.normalise_input(args["text"]), shown)
        return Insert.of_text_file(document, shown, insertion.new_text, after_line=after_line, insertion=insertion)

    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        insert = self.plan(args, ctx)
        ctx.preserve(insert.document.path)
        insert.document.write(insert.new_text)

        done, after_line = insert.insertion, insert.after_line
        summary = (
            f"Inserted {done.inserted} line(s) into {insert.shown} after line {after_line}:\n"
            f"{snippet(done.lines, after_line + 1, after_line + done.inserted)}"
        )
        return insert.result(summary, inserted_lines=done.inserted)
