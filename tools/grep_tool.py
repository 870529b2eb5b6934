"""The `grep` tool: search file contents with a regular expression."""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tools.base import Tool, ToolContext, ToolError, ToolResult
from tools.file_listing import list_files
from tools.glob_patterns import compile_glob
from tools.text_files import decode_text, looks_binary
from tools.workspace_paths import describe_path_arg, display_path, resolve_in_workspace

DEFAULT_MAX_RESULTS = 200
MAX_RESULTS_LIMIT = 2000
MAX_MATCH_LINE_CHARS = 300
# Huge files are almost always data or generated code, and slow to scan.
MAX_SEARCHED_FILE_BYTES = 10 * 1024 * 1024


@dataclass
class _SearchOutcome:
    matches: list[str] = field(default_factory=list)
    files_searched: int = 0
    files_with_matches: int = 0
    capped: bool = False


class GrepTool(Tool):
    name = "grep"
    description = (
        "Search file contents with a Python regular expression. Prints matching lines as "
        "`path:line:text`. Searches the workspace (or `path`, a file or directory), skipping "
        "binary files and anything .gitignore excludes. `glob` limits which files are searched "
        "(\"*.py\" matches by file name, \"src/**/*.ts\" by path)."
    )
    parameters = {
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "minLength": 1, "description": "Python regular expression."},
            "path": {
                "type": "string",
                "description": "File or directory to search, relative to the workspace (default: all of it).",
            },
            "glob": {"type": "string", "description": "Only search files matching this glob, e.g. \"*.py\"."},
            "case_insensitive": {"type": "boolean", "description": "Ignore case (default false)."},
            "max_results": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_RESULTS_LIMIT,
                "description": f"Most matching lines to return (default {DEFAULT_MAX_RESULTS}).",
            },
        },
        "required": ["pattern"],
        "additionalProperties": False,
    }
    reads_only = True

    def describe_call(self, args: dict[str, Any], workspace: Path | None = None) -> str:
        if not isinstance(args, dict):
            return ""
        where = describe_path_arg(args.get("path"), workspace) or "."
        suffix = f" ({args['glob']})" if args.get("glob") else ""
        return f"grep {args.get('pattern', '')} in {where}{suffix}"

    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        flags = re.IGNORECASE if args.get("case_insensitive") else 0
        try:
            regex = re.compile(args["pattern"], flags)
        except re.error as exc:
            raise ToolError(f"pattern is not a valid Python regular expression: {exc}") from exc
        base = resolve_in_workspace(args.get("path", "."), ctx.workspace)
        if not base.exists():
            raise ToolError(f"{args.get('path')} does not exist; give an existing file or directory")
        max_results = int(args.get("max_results", DEFAULT_MAX_RESULTS))
        name_glob = args.get("glob")
        # Listing and scanning are blocking file work; keep the event loop free meanwhile.
        outcome = await asyncio.to_thread(_search, ctx.workspace, base, regex, name_glob, max_results)
        shown_base = display_path(base, ctx.workspace)
        metadata = {
            "match_count": len(outcome.matches),
            "files_searched": outcome.files_searched,
            "capped": outcome.capped,
        }
        if not outcome.matches:
            filter_note = f" matching {name_glob}" if name_glob else ""
            return ToolResult(
                output=f"No matches for {args['pattern']!r} in {shown_base} "
                f"({outcome.files_searched} files{filter_note} searched).",
                metadata=metadata,
            )
        output = "\n".join(outcome.matches)
        if outcome.capped:
            output += (
                f"\n[results capped at {max_results} lines; narrow the pattern, path or glob, "
                "or raise max_results]"
            )
        return ToolResult(output=output, metadata=metadata)


def _search(
    workspace: Path, base: Path, regex: re.Pattern[str], name_glob: str | None, max_results: int
) -> _SearchOutcome:
    outcome = _SearchOutcome()
    if base.is_file():
        files = [base]
    else:
        files = [path for path in list_files(workspace, base) if _glob_accepts(path, base, name_glob)]
    for path in files:
        if outcome.capped:
            break
        text = _read_searchable_text(path)
        if text is None:
            continue
        outcome.files_searched += 1
        shown = display_path(path, workspace)
        found_here = False
        for number, line in enumerate(text.split("\n"), start=1):
            if regex.search(line):
                if len(outcome.matches) >= max_results:
                    outcome.capped = True
                    break
                found_here = True
                outcome.matches.append(f"{shown}:{number}:{_clip(line.rstrip(chr(13)))}")
        outcome.files_with_matches += found_here
    return outcome


def _glob_accepts(path: Path, base: Path, name_glob: str | None) -> bool:
    if not name_glob:
        return True
    # Like ripgrep: a pattern without '/' is matched against the file name alone.
    if "/" not in name_glob:
        return compile_glob(name_glob).match(path.name) is not None
    return compile_glob(name_glob.lstrip("/")).match(path.relative_to(base).as_posix()) is not None


def _read_searchable_text(path: Path) -> str | None:
    try:
        if path.stat().st_size > MAX_SEARCHED_FILE_BYTES:
            return None
        data = path.read_bytes()
    except OSError:
        return None
    if looks_binary(data):
        return None
    return decode_text(data)[0]


def _clip(line: str) -> str:
    if len(line) <= MAX_MATCH_LINE_CHARS:
        return line
    return line[:MAX_MATCH_LINE_CHARS] + f"… [{len(line)} chars]"
