"""The `edit` tool: replace an exact piece of text in a file."""

from __future__ import annotations

import asyncio
import math
from pathlib import Path
from typing import Any

from tools.base import Tool, ToolContext, ToolError, ToolResult
from tools.closest_match import ClosestLines, find_closest_lines
from tools.file_changes import change_result, require_viewed
from tools.numbered_lines import format_numbered, snippet
from tools.text_files import TextFile, line_number_at, split_lines
from tools.workspace_paths import describe_path_arg, display_path, resolve_in_workspace

MAX_LISTED_MATCH_LINES = 20


class EditTool(Tool):
    name = "edit"
    description = (
        "Replace text in a file that was viewed in this session. `old_string` must match the "
        "file exactly (including indentation, without view's line numbers) and occur exactly "
        "once; include a few surrounding lines to make it unique, or set replace_all to change "
        "every occurrence. If it is not found, nothing changes and the most similar lines are "
        "shown so you can retry. Line endings and encoding of the file are kept."
    )
    parameters = {
        "type": "object",
        "properties": {
            "path": {
                "type": "string",
                "description": "File to edit, relative to the workspace (or absolute inside it).",
            },
            "old_string": {"type": "string", "description": "Exact text to replace."},
            "new_string": {"type": "string", "description": "Text to put in its place."},
            "replace_all": {
                "type": "boolean",
                "description": "Replace every occurrence instead of requiring exactly one (default false).",
            },
        },
        "required": ["path", "old_string", "new_string"],
        "additionalProperties": False,
    }
    reads_only = False

    def describe_call(self, args: dict[str, Any], workspace: Path | None = None) -> str:
        return describe_path_arg(args.get("path"), workspace) if isinstance(args, dict) else ""

    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        path = resolve_in_workspace(args["path"], ctx.workspace)
        shown = display_path(path, ctx.workspace)
        replace_all = bool(args.get("replace_all", False))
        if args["old_string"] == args["new_string"]:
            raise ToolError("old_string and new_string are identical; there is nothing to change")
        if args["old_string"] == "":
            raise ToolError("old_string is empty; give the exact text to replace (use insert to add lines)")
        document = TextFile.load(path, shown)
        require_viewed(ctx, path, shown, "edit")
        old_string = document.normalise_input(args["old_string"])
        new_string = document.normalise_input(args["new_string"])
        old_text = document.text

        count = old_text.count(old_string)
        if count == 0:
            # The closest-match search is CPU work; the event loop keeps serving meanwhile.
            closest = await asyncio.to_thread(find_closest_lines, old_text, old_string)
            raise ToolError(_not_found_message(closest, shown))
        if count > 1 and not replace_all:
            raise ToolError(_ambiguous_message(old_text, old_string, shown, count))

        first_at = old_text.find(old_string)
        new_text = (
            old_text.replace(old_string, new_string)
            if replace_all
            else old_text[:first_at] + new_string + old_text[first_at + len(old_string) :]
        )
        ctx.preserve(document.path)
        document.write(new_text)

        first_line = line_number_at(new_text, first_at)
        # A trailing newline ends the last replaced line; it does not reach into the next one.
        last_line = first_line + new_string.rstrip("\n").count("\n")
        shown_region = snippet(split_lines(new_text), first_line, last_line)
        occurrences = f"{count} occurrences" if count > 1 else "1 occurrence"
        summary = f"Edited {shown}: replaced {occurrences}. Around line {first_line} now:\n{shown_region}"
        return change_result(summary, shown, old_text, new_text, replacements=count)


def _not_found_message(closest: ClosestLines | None, shown: str) -> str:
    message = f"old_string was not found in {shown}; nothing was changed."
    if closest is None:
        return message + f" {shown} is empty."
    # Rounded down: a near miss must not read as "100% alike".
    percent = math.floor(closest.similarity * 100)
    return (
        f"{message} The most similar lines ({percent}% alike) are:\n"
        f"{format_numbered(closest.lines, closest.first_line)}\n"
        "Copy the exact text from the file (without the line numbers) into old_string and retry."
    )


def _ambiguous_message(file_text: str, wanted: str, shown: str, count: int) -> str:
    lines: list[int] = []
    start = file_text.find(wanted)
    while start >= 0 and len(lines) < MAX_LISTED_MATCH_LINES:
        lines.append(line_number_at(file_text, start))
        start = file_text.find(wanted, start + len(wanted))
    listed = ", ".join(str(n) for n in lines) + (", …" if count > len(lines) else "")
    return (
        f"old_string occurs {count} times in {shown} (starting at lines {listed}); nothing was "
        "changed. Include more surrounding lines to make it unique, or set replace_all to true."
    )
