"""The `grep` tool: search file contents with a regular expression."""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tools.base import Tool, ToolContext, ToolError, ToolResult
from tools.file_listing import list_files, refuse_git_dir
from tools.glob_patterns import compile_glob
from tools.grep_search import LineMatch, SearchOutcome, search_files
from tools.path_tool import path_property, resolve_path
from tools.ripgrep_pattern import engine_flags
from tools.text_files import decode_text, mark_stray_bytes
from tools.workspace_paths import describe_path_arg, display_path

DEFAULT_MAX_RESULTS = 200
MAX_RESULTS_LIMIT = 2000
MAX_MATCH_LINE_CHARS = 300
# Huge files found by walking a directory are almost always data or generated code; they
# are reported as skipped. A file named as `path` is searched whatever its size.
MAX_SEARCHED_FILE_BYTES = 10 * 1024 * 1024
MAX_LISTED_SKIPS = 10
# Listing and searching together; rg is then killed and what was found so far is shown.
SEARCH_TIMEOUT_SECONDS = 60.0
# Enough of a file to tell UTF-8 with stray bytes from latin-1.
ENCODING_SNIFF_BYTES = 1024 * 1024


@dataclass
class _Selection:
    files: list[Path] = field(default_factory=list)
    too_large: list[tuple[Path, int]] = field(default_factory=list)


class GrepTool(Tool):
    name = "grep"
    description = (
        "Search file contents with a regular expression (Python syntax without lookaround or "
        "backreferences; matched one line at a time). Prints matching lines as "
        "`path:line:text`. Searches the workspace (or `path`, a file or directory), skipping "
        "binary files and anything .gitignore excludes; files over 10 MB are skipped and named "
        "unless given as `path`. `glob` limits which files are searched "
        '("*.py" matches by file name, "src/**/*.ts" by path).'
    )
    parameters = {
        "type": "object",
        "properties": {
            "pattern": {
                "type": "string",
                "minLength": 1,
                "description": "Regular expression (Python syntax without lookaround or backreferences).",
            },
            "path": path_property("File or directory to search", default="all of it"),
            "glob": {"type": "string", "description": 'Only search files matching this glob, e.g. "*.py".'},
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

    def __init__(self, timeout_seconds: float = SEARCH_TIMEOUT_SECONDS) -> None:
        self.timeout_seconds = timeout_seconds

    def describe_call(self, args: dict[str, Any], workspace: Path | None = None) -> str:
        if not isinstance(args, dict):
            return ""
        where = describe_path_arg(args.get("path"), workspace) or "."
        suffix = f" ({args['glob']})" if args.get("glob") else ""
        return f"grep {args.get('pattern', '')} in {where}{suffix}"

    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        pattern: str = args["pattern"]
        case_insensitive = bool(args.get("case_insensitive"))
        try:
            # Compiling never runs the pattern, so this is safe; the search itself is ripgrep's.
            re.compile(pattern, re.IGNORECASE if case_insensitive else 0)
        except re.error as exc:
            raise ToolError(f"pattern is not a valid Python regular expression: {exc}") from exc
        base, shown_base = resolve_path(args.get("path", "."), ctx)
        if not base.exists():
            raise ToolError(f"{args.get('path')} does not exist; give an existing file or directory")
        refuse_git_dir(base, ctx.workspace, shown_base, "grep does not search")
        max_results = int(args.get("max_results", DEFAULT_MAX_RESULTS))
        name_glob = args.get("glob")
        case_flags = ["--ignore-case" if case_insensitive else "--case-sensitive"]
        rg_args = [*case_flags, *await engine_flags(pattern, case_flags), "--crlf", "--regexp", pattern]

        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout_seconds
        selection = await self._select(base, name_glob, deadline)
        cwd = base.parent if base.is_file() else base
        outcome = await search_files(selection.files, cwd, rg_args, max_results, deadline)
        if _needs_latin1_pass(pattern, outcome):
            latin1 = await search_files(selection.files, cwd, ["--encoding", "latin1", *rg_args], max_results, deadline)
            await asyncio.to_thread(_merge_latin1_matches, outcome, latin1)
        # Decoding lines may read files to learn their encoding: blocking file work.
        lines = await asyncio.to_thread(_render_matches, outcome.matches, selection.files, ctx.workspace)
        return _result(args, shown_base, selection, outcome, lines, max_results, self.timeout_seconds, ctx.workspace)

    async def _select(self, base: Path, name_glob: str | None, deadline: float) -> _Selection:
        if base.is_file():
            return _Selection(files=[base])
        remaining = max(deadline - asyncio.get_running_loop().time(), 0.001)
        listed = await list_files(base, remaining)
        wanted = [path for path in listed if _glob_accepts(path, base, name_glob)]
        return await asyncio.to_thread(_split_by_size, wanted)


def _glob_accepts(path: Path, base: Path, name_glob: str | None) -> bool:
    if not name_glob:
        return True
    # Like ripgrep: a pattern without '/' is matched against the file name alone.
    if "/" not in name_glob:
        return compile_glob(name_glob).match(path.name) is not None
    return compile_glob(name_glob.lstrip("/")).match(path.relative_to(base).as_posix()) is not None


def _split_by_size(paths: list[Path]) -> _Selection:
    selection = _Selection()
    for path in paths:
        try:
            size = path.stat().st_size
        except OSError:
            continue
        if size > MAX_SEARCHED_FILE_BYTES:
            selection.too_large.append((path, size))
        else:
            selection.files.append(path)
    return selection


def _needs_latin1_pass(pattern: str, outcome: SearchOutcome) -> bool:
    # rg reads files as UTF-8, where a latin-1 file's accented letters are invalid bytes that
    # neither "é" nor "." nor "\\w" match. Patterns that cannot match such a letter (plain
    # ASCII text such as "TODO" or "def run") find the same lines either way.
    could_differ = not pattern.isascii() or _MAY_MATCH_NON_ASCII.search(pattern) is not None
    return could_differ and not outcome.capped and not outcome.timed_out


_MAY_MATCH_NON_ASCII = re.compile(r"\.|\[\^|\\[wWsSdDbBpPX]")


def _merge_latin1_matches(outcome: SearchOutcome, latin1: SearchOutcome) -> None:
    """Add lines only the latin-1 reading found, and only from files that really are latin-1."""
    encodings: dict[Path, str] = {}
    seen = {(match.path, match.line_number) for match in outcome.matches}
    for match in latin1.matches:
        if (match.path, match.line_number) in seen:
            continue
        if match.path not in encodings:
            encodings[match.path] = _file_encoding(match.path)
        if encodings[match.path] == "latin-1":
            outcome.matches.append(match)
    outcome.capped = outcome.capped or latin1.capped
    outcome.timed_out = outcome.timed_out or latin1.timed_out


def _render_matches(matches: list[LineMatch], order: list[Path], workspace: Path) -> list[str]:
    rank = {path: index for index, path in enumerate(order)}
    encodings: dict[Path, str] = {}
    rendered: list[str] = []
    for match in sorted(matches, key=lambda m: (rank.get(m.path, len(rank)), m.line_number)):
        line = match.line
        if isinstance(line, bytes):
            if match.path not in encodings:
                encodings[match.path] = _file_encoding(match.path)
            # The same reading view gives the file: stray bytes as markers, or latin-1.
            line = mark_stray_bytes(line) if encodings[match.path] == "utf-8" else line.decode("latin-1")
        rendered.append(f"{display_path(match.path, workspace)}:{match.line_number}:{_clip(line)}")
    return rendered


def _file_encoding(path: Path) -> str:
    try:
        with path.open("rb") as handle:
            sample = handle.read(ENCODING_SNIFF_BYTES)
    except OSError:
        return "utf-8"
    if len(sample) == ENCODING_SNIFF_BYTES:
        # Ending at a line break, a character cut in half at the end does not count as bad bytes.
        sample = sample[: sample.rfind(b"\n") + 1] or sample
    return decode_text(sample).encoding


def _result(
    args: dict[str, Any],
    shown_base: str,
    selection: _Selection,
    outcome: SearchOutcome,
    lines: list[str],
    max_results: int,
    timeout: float,
    workspace: Path,
) -> ToolResult:
    files_searched = len(selection.files) - len(outcome.binary_files)
    # Two readings together may find more lines than either run kept.
    capped = outcome.capped or len(lines) > max_results
    metadata: dict[str, Any] = {
        "match_count": min(len(lines), max_results),
        "files_searched": files_searched,
        "capped": capped,
        "timed_out": outcome.timed_out,
        "skipped_large_files": [str(path) for path, _ in selection.too_large],
        "binary_files_with_matches": [str(path) for path in outcome.binary_files],
    }
    skip_note = _skip_note(selection.too_large, workspace)
    notes = [note for note in (skip_note, _error_note(outcome.errors)) if note]
    if outcome.timed_out:
        stop = f"grep stopped after {timeout:g} s, the time limit, before searching every file"
        if not lines:
            return ToolResult.error(
                f"{stop}; no matches for {args['pattern']!r} so far. Narrow the path or glob.", **metadata
            )
        notes.insert(0, f"[{stop}; the matches found until then are shown. Narrow the path or glob.]")
    if not lines:
        filter_note = f" matching {args['glob']}" if args.get("glob") else ""
        details = [f"{_count(files_searched, 'file')}{filter_note} searched"]
        if outcome.binary_files:
            details.append(f"{_count(len(outcome.binary_files), 'binary file')} with matches not shown")
        if skip_note:
            details.append(skip_note.strip("[]"))
        extra = "".join(f"\n{note}" for note in notes if note is not skip_note)
        return ToolResult(
            output=f"No matches for {args['pattern']!r} in {shown_base} ({'; '.join(details)}).{extra}",
            metadata=metadata,
        )
    output = "\n".join(lines[:max_results])
    if capped:
        output += f"\n[results capped at {max_results} lines; narrow the pattern, path or glob, or raise max_results]"
    output += "".join(f"\n{note}" for note in notes)
    return ToolResult(output=output, metadata=metadata)


def _skip_note(too_large: list[tuple[Path, int]], workspace: Path) -> str | None:
    if not too_large:
        return None
    listed = ", ".join(
        f"{display_path(path, workspace)} ({size / (1024 * 1024):.1f} MB)"
        for path, size in too_large[:MAX_LISTED_SKIPS]
    )
    more = f" and {len(too_large) - MAX_LISTED_SKIPS} more" if len(too_large) > MAX_LISTED_SKIPS else ""
    limit_mb = MAX_SEARCHED_FILE_BYTES // (1024 * 1024)
    return (
        f"[not searched: {_count(len(too_large), 'file')} over {limit_mb} MB: {listed}{more}; "
        "give one as path to search it anyway]"
    )


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


def _error_note(errors: list[str]) -> str | None:
    if not errors:
        return None
    return f"[{_count(len(errors), 'file')} could not be read: {errors[0]}]"


def _clip(line: str) -> str:
    if len(line) <= MAX_MATCH_LINE_CHARS:
        return line
    return line[:MAX_MATCH_LINE_CHARS] + f"… [{len(line)} chars]"
