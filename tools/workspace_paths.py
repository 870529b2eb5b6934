"""Confine every path a tool touches to the workspace."""

from __future__ import annotations

import os
from pathlib import Path

from tools.base import ToolError


def resolve_in_workspace(raw_path: str, workspace: Path) -> Path:
    """Turn a model-supplied path into a resolved path inside `workspace`, or raise ToolError.

    Relative paths are taken from the workspace; absolute paths are accepted when they lie
    inside it. Symlinks are followed before the check, because what matters is where a
    read or write actually lands.
    """
    if not raw_path or not raw_path.strip():
        raise ToolError("path is empty; give a path inside the workspace")
    if "\x00" in raw_path:
        raise ToolError("path contains a NUL character; give a plain path inside the workspace")
    root = workspace.resolve()
    candidate = Path(raw_path)
    if not candidate.is_absolute():
        candidate = root / candidate
    resolved = candidate.resolve()
    if not is_inside(resolved, root):
        lexical = Path(os.path.normpath(candidate))
        if is_inside(lexical, root) or _is_inside_unresolved(lexical, workspace):
            # The text of the path stays inside; a symlink along the way leads out.
            raise ToolError(
                f"path {raw_path} resolves to {resolved}, outside the workspace {root} "
                "(through a symlink); use a path inside it"
            )
        raise ToolError(f"path {raw_path} is outside the workspace {root}; use a path inside it")
    return resolved


def is_inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def display_path(path: Path, workspace: Path) -> str:
    """Workspace-relative POSIX form used in output; '.' for the root itself."""
    try:
        relative = path.resolve().relative_to(workspace.resolve())
    except ValueError:
        return str(path)
    text = relative.as_posix()
    return text if text else "."


def describe_path_arg(raw_path: object, workspace: Path | None) -> str:
    """Normalise a path argument for describe_call without touching the filesystem."""
    text = str(raw_path) if raw_path is not None else ""
    if not text:
        return ""
    if workspace is not None and os.path.isabs(text):
        root = os.path.normpath(str(workspace))
        normalised = os.path.normpath(text)
        if normalised == root:
            return "."
        if normalised.startswith(root.rstrip(os.sep) + os.sep):
            return Path(os.path.relpath(normalised, root)).as_posix()
        return normalised
    if os.path.isabs(text):
        return os.path.normpath(text)
    return Path(os.path.normpath(text)).as_posix()


def _is_inside_unresolved(path: Path, workspace: Path) -> bool:
    # The caller's workspace may itself be spelled through a symlink (e.g. /tmp on macOS).
    unresolved_root = Path(os.path.normpath(os.path.abspath(workspace)))
    return is_inside(path, unresolved_root)
