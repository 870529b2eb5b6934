"""Rules, plan and result shared by the tools that change files (create, edit, insert).

Each of them computes a `FileChange` (the file's text before and after) in one method, `plan`,
that reads but never writes. `run` carries the plan out; `preview` shows it as a diff in the
approval prompt. So the prompt shows exactly what `run` would write, and nothing for a call that
`run` would refuse.
"""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

from tools.base import ToolContext, ToolError, ToolResult
from tools.diffs import unified_diff
from tools.path_tool import PathTool
from tools.text_files import TextFile


def require_viewed(ctx: ToolContext, path: Path, shown: str, tool_name: str) -> None:
    # Changing a file the model has not read leads to edits based on guesses.
    if not ctx.was_viewed(path):
        raise ToolError(f"{shown} has not been viewed in this session; view it first, then call {tool_name} again")


@dataclass(frozen=True, kw_only=True)
class FileChange:
    """What one call would do to one file. Tools subclass it to carry what their summary needs."""

    path: Path
    shown: str  # the path as output shows it (workspace-relative)
    old_text: str
    new_text: str
    is_new_file: bool = False
    # The file as loaded, where the change is to an existing text file; writing goes through it.
    document: TextFile | None = None

    @classmethod
    def of_text_file(cls, document: TextFile, shown: str, new_text: str, **details: Any) -> Self:
        """The change of `document`, as loaded, to `new_text`; `details` fill a subclass's fields."""
        return cls(
            path=document.path, shown=shown, old_text=document.text, new_text=new_text, document=document, **details
        )

    def diff(self) -> str:
        """A unified diff with a/PATH and b/PATH headers (/dev/null for a new file); '' when equal."""
        return unified_diff(self.old_text, self.new_text, self.shown, is_new_file=self.is_new_file)

    def result(self, summary: str, **extra: Any) -> ToolResult:
        """The tool's result once the change is written: `summary` for the model, the diff in metadata."""
        metadata: dict[str, Any] = {"path": self.shown, "diff": self.diff(), "files_changed": [self.shown], **extra}
        return ToolResult(output=summary, metadata=metadata)


class FileChangeTool(PathTool):
    """A path tool that writes the file: `run` and `preview` both start from `plan`."""

    @abstractmethod
    def plan(self, args: dict[str, Any], ctx: ToolContext) -> FileChange:
        """The change these (validated) arguments make, reading the file as `run` does; raises
        ToolError where `run` refuses. Writes nothing."""

    def preview(self, args: dict[str, Any], ctx: ToolContext) -> str | None:
        """The diff `run` would write, or None where it would refuse or change nothing.

        A refusal gives None rather than a note: the approval prompt then shows the arguments
        themselves, and the refusal reaches the model in full when the call runs.
        """
        if self.argument_problem(args) is not None:
            return None
        try:
            change = self.plan(args, ctx)
        except Exception:  # noqa: BLE001 - a preview is advisory and must never break the approval prompt
            return None
        return change.diff() or None
