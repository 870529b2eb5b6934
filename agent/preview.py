"""What an edit would change, shown in the approval prompt before it runs."""

from __future__ import annotations

import difflib
from typing import Any

from tools.base import ToolContext, ToolError
from tools.workspace_paths import resolve_in_workspace


def preview_diff(tool_name: str, args: dict[str, Any], ctx: ToolContext) -> str | None:
    """A unified diff for create/edit/insert, or None for other tools or unreadable files."""
    if tool_name not in ("create", "edit", "insert") or not isinstance(args.get("path"), str):
        return None
    try:
        path = resolve_in_workspace(args["path"], ctx.workspace)
    except ToolError:
        return None
    try:
        before = path.read_text(encoding="utf-8") if path.is_file() else ""
    except (OSError, UnicodeDecodeError):
        return None
    if tool_name == "create":
        after = str(args.get("content", ""))
    elif tool_name == "edit":
        old, new = str(args.get("old_string", "")), str(args.get("new_string", ""))
        if not old or old not in before:
            return None
        after = before.replace(old, new) if args.get("replace_all") else before.replace(old, new, 1)
    else:
        lines = before.splitlines(keepends=True)
        at = int(args.get("line", 0) or 0)
        text = str(args.get("text", ""))
        after = "".join(lines[:at]) + text + ("" if text.endswith("\n") else "\n") + "".join(lines[at:])
    rel = args["path"]
    diff = difflib.unified_diff(
        before.splitlines(keepends=True), after.splitlines(keepends=True), f"a/{rel}", f"b/{rel}"
    )
    return "".join(diff) or None
