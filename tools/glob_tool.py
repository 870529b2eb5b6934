"""The `glob` tool: find files by path pattern."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from tools.base import Tool, ToolContext, ToolError, ToolResult
from tools.file_listing import inside_git_dir, list_files, refuse_git_dir
from tools.glob_patterns import compile_glob
from tools.path_tool import resolve_path
from tools.workspace_paths import describe_path_arg, display_path

MAX_GLOB_RESULTS = 200


class GlobTool(Tool):
    name = "glob"
    description = (
        "Find files whose path matches a glob pattern, relative to the workspace (or to `path`). "
        "`*` and `?` stay within one directory and `**/` spans any number of directories: "
        '"*.py" matches only the top level, "**/*.py" matches everywhere. Files ignored by '
        f".gitignore are skipped. Lists at most {MAX_GLOB_RESULTS} paths, newest first."
    )
    parameters = {
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "minLength": 1, "description": 'Glob pattern, e.g. "src/**/*.py".'},
            "path": {
                "type": "string",
                "description": "Directory the pattern is relative to (default: the workspace root).",
            },
        },
        "required": ["pattern"],
        "additionalProperties": False,
    }
    reads_only = True

    def describe_call(self, args: dict[str, Any], workspace: Path | None = None) -> str:
        if not isinstance(args, dict):
            return ""
        where = describe_path_arg(args.get("path"), workspace)
        return f"glob {args.get('pattern', '')}" + (f" in {where}" if where else "")

    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        pattern: str = args["pattern"]
        while pattern.startswith("./"):
            pattern = pattern[2:]
        if not pattern or pattern.startswith("/") or ".." in pattern.split("/"):
            raise ToolError(
                f"pattern {pattern} must be relative and stay inside the search directory; "
                "use the path argument to choose the directory"
            )
        base, shown_base = resolve_path(args.get("path", "."), ctx)
        if not base.is_dir():
            raise ToolError(f"{args.get('path')} is not a directory; give a directory as path")
        refuse_git_dir(base, ctx.workspace, shown_base, "glob does not list")
        matches = await _matching_files(base, pattern)
        metadata = {"match_count": len(matches), "capped": len(matches) > MAX_GLOB_RESULTS}
        if not matches:
            hint = f' (to search subdirectories too, use "**/{pattern}")' if "/" not in pattern else ""
            return ToolResult(output=f"No files match {pattern} in {shown_base}{hint}.", metadata=metadata)
        listed = [display_path(path, ctx.workspace) for path in matches[:MAX_GLOB_RESULTS]]
        output = "\n".join(listed)
        if len(matches) > MAX_GLOB_RESULTS:
            output += (
                f"\n[showing the {MAX_GLOB_RESULTS} newest of {len(matches)} matching files; use a narrower pattern]"
            )
        return ToolResult(output=output, metadata=metadata)


async def _matching_files(base: Path, pattern: str) -> list[Path]:
    # Listing only below the pattern's literal leading directories ("src/" of "src/**/*.py")
    # spares walking the rest of the tree.
    root = base.joinpath(*_literal_directories(pattern))
    # The full listing follows no symlinks and skips .git; a shortcut must not do either.
    if not root.is_dir() or root.resolve() != root or inside_git_dir(root, base):
        return []
    regex = compile_glob(pattern)
    listed = await list_files(root)
    matched = [path for path in listed if regex.match(path.relative_to(base).as_posix())]
    # Statting every match is blocking file work; keep the event loop free meanwhile.
    return await asyncio.to_thread(_newest_first, matched)


def _literal_directories(pattern: str) -> list[str]:
    directories = pattern.split("/")[:-1]
    literal: list[str] = []
    for part in directories:
        if not part or part == "." or any(char in part for char in "*?[\\"):
            break
        literal.append(part)
    return literal


def _newest_first(paths: list[Path]) -> list[Path]:
    return sorted(paths, key=lambda path: (-_mtime(path), path.as_posix()))


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0
