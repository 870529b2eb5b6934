"""Where a file tool call lands, for the permission rules: the path as written and as resolved.

Rules name paths inside the workspace (`edit(secret/**)`), but a call may spell its path
through a symlink (`alias/key.txt` with `alias -> secret`) or with `..`. The tools follow
symlinks, so the policy must judge the resolved path too.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

__all__ = ["AGENT_CONFIG_FILES", "PathTarget", "path_target"]

# The workspace's own agent configuration: editing it changes what the agent may do.
AGENT_CONFIG_FILES = frozenset({".localagent.toml", ".mcp.json"})
GIT_DIR = ".git"


@dataclass(frozen=True)
class PathTarget:
    # Lexically normalised as the call spells it: "src/a.py", "../x", "/etc/passwd".
    written: str
    # Workspace-relative with symlinks followed; None when it lands outside the workspace.
    resolved: str | None

    @property
    def spellings(self) -> tuple[str, ...]:
        """Both forms, for deny and ask rules: either matching is enough to stop a call."""
        forms = [self.written.lstrip("/")]
        if self.resolved is not None and self.resolved not in forms:
            forms.append(self.resolved)
        return tuple(forms)

    def inside_git(self) -> bool:
        # Case-folded: on case-insensitive file systems `.GIT/hooks` is `.git/hooks`.
        return any(GIT_DIR in _parts(form) for form in (self.written, self.resolved) if form is not None)

    def is_agent_config(self) -> bool:
        """Whether it lands on the workspace's own `.localagent.toml` or `.mcp.json`."""
        return any(form is not None and form.casefold() in AGENT_CONFIG_FILES for form in (self.resolved, self.written))


def path_target(
    summary: str, workspace: Path | None = None, arguments: Mapping[str, object] | None = None
) -> PathTarget:
    """From the call summary (a normalised path) and, when known, the raw `path` argument."""
    written = _normalise(summary)
    raw = arguments.get("path") if arguments is not None else None
    raw_text = raw if isinstance(raw, str) and raw.strip() else summary.strip()
    if workspace is None:
        # Nothing to resolve against: only the text can say whether it stays inside.
        inside = written and not written.startswith("/") and written != ".." and not written.startswith("../")
        return PathTarget(written, written if inside else None)
    return PathTarget(written, _resolve(raw_text, workspace))


def _resolve(raw: str, workspace: Path) -> str | None:
    if not raw or "\x00" in raw:
        return None
    try:
        root = os.path.realpath(workspace)
        landed = os.path.realpath(os.path.join(root, raw))
    except (OSError, ValueError):
        return None
    if landed == root:
        return "."
    if not landed.startswith(root.rstrip(os.sep) + os.sep):
        return None
    return Path(os.path.relpath(landed, root)).as_posix()


def _normalise(summary: str) -> str:
    text = summary.strip()
    return posixpath.normpath(text) if text else ""


def _parts(path: str) -> list[str]:
    return [part.casefold() for part in PurePosixPath(path).parts]
