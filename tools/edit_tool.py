"""The `edit` tool: replace an exact piece of text in a file."""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass
from typing import Any

from tools.base import ToolContext, ToolError, ToolResult
from tools.closest_match import ClosestLines, find_closest_lines
from tools.file_changes import FileChange, FileChangeTool, require_viewed
from tools.numbered_lines import format_numbered, snippet
from tools.path_tool import path_property, resolve_path
from tools.text_files import TextFile, line_number_at, split_lines

MAX_LISTED_MATCH_LINES = 20


class OldStringNotFound(ToolError):
    """`old_string` occurs nowhere; `run` adds the most similar lines to the message."""

    def __init__(self, file_text: str, wanted: str, shown: str) -> None:
        super().__init__(f"old_string was not found in {shown}; nothing was changed.")
        self.file_text = file_text
        self.wanted = wanted
        self.shown = shown


@dataclass(frozen=True)
class Replacement:
    new_text: str
    count: int
    # The lines of the new text that hold the first replacement.
    first_line: int
    last_line: int


@dataclass(frozen=True, kw_only=True)
class Edit(FileChange):
    document: TextFile
    replacement: Replacement


def replace_text(old_text: str, old_string: str, new_string: str, *, replace_all: bool, shown: str) -> Replacement:
    """`old_text` with `old_string` replaced: its one occurrence, or every one with `replace_all`.

    Raises OldStringNotFound when it does not occur, ToolError when it occurs more than once
    without `replace_all`.
    """
    count = old_text.count(old_string)
    if count == 0:
        raise OldStringNotFound(old_text, old_string, shown)
    if count > 1 and not replace_all:
        raise ToolError(_ambiguous_message(old_text, old_string, shown, count))
    first_at = old_text.find(old_string)
    new_text = (
        old_text.replace(old_string, new_string)
        if replace_all
        else old_text[:first_at] + new_string + old_text[first_at + len(old_string) :]
    )
    first_line = line_number_at(new_text, first_at)
    # A trailing newline ends the last replaced line; it does not reach into the next one.
    last_line = first_line + new_string.rstrip("\n").count("\n")
    return Replacement(new_text, count, first_line, last_line)


class EditTool(FileChangeTool):
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
            "path": path_property("File to edit"),
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

    def plan(self, args: dict[str, Any], ctx: ToolContext) -> Edit:
        path, shown = resolve_path(args["path"], ctx)
        if args["old_string"] == args["new_string"]:
            raise ToolError("old_string and new_string are identical; there is nothing to change")
        if args["old_string"] == "":
            raise ToolError("old_string is empty; give the exact text to replace (use insert to add lines)")
        document = TextFile.load(path, shown)
        require_viewed(ctx, path, shown, "edit")
        replacement = replace_text(
            document.text,
            document.normalise_input(args["old_string"]),
            document.normalise_input(args["new_string"]),
            replace_all=bool(args.get("replace_all", False)),
            shown=shown,
        )
        return Edit.of_text_file(document, shown, replacement.new_text, replacement=replacement)

    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        try:
            edit = self.plan(args, ctx)
        except OldStringNotFound as missing:
            # The closest-match search is CPU work; the event loop keeps serving meanwhile.
            closest = await asyncio.to_thread(find_closest_lines, missing.file_text, missing.wanted)
            raise ToolError(_not_found_message(closest, missing)) from None
        ctx.preserve(edit.document.path)
        edit.document.write(edit.new_text)

        done = edit.replacement
        shown_region = snippet(split_lines(edit.new_text), done.first_line, done.last_line)
        occurrences = f"{done.count} occurrences" if done.count > 1 else "1 occurrence"
        summary = f"Edited {edit.shown}: replaced {occurrences}. Around line {done.first_line} now:\n{shown_region}"
        return edit.result(summary, replacements=done.count)


def _not_found_message(closest: ClosestLines | None, missing: OldStringNotFound) -> str:
    message = str(missing)
    if closest is None:
        return message + f" {missing.shown} is empty."
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
