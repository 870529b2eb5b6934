"""The base of the tools whose `path` argument names one file or directory: view, create, edit, insert."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tools.base import Tool, ToolContext
from tools.workspace_paths import describe_path_arg, display_path, resolve_in_workspace


def path_property(what: str, *, default: str | None = None) -> dict[str, Any]:
    """The schema of a `path` argument; `what` is e.g. "File to edit"."""
    where = f"(default: {default})" if default else "(or absolute inside it)"
    return {"type": "string", "description": f"{what}, relative to the workspace {where}."}


def resolve_path(raw_path: str, ctx: ToolContext) -> tuple[Path, str]:
    """The resolved path inside the workspace and its form in output; ToolError outside it."""
    path = resolve_in_workspace(raw_path, ctx.workspace)
    return path, display_path(path, ctx.workspace)


class PathTool(Tool):
    """A tool acting on the one file or directory its required `path` argument names.

    Approval prompts and permission rules see that path, workspace-relative where it lies inside.
    """

    def describe_call(self, args: dict[str, Any], workspace: Path | None = None) -> str:
        return describe_path_arg(args.get("path"), workspace) if isinstance(args, dict) else ""
