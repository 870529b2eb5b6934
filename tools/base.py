"""Core types shared by every built-in tool: the tool interface, its context and its result."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from tools.schema_validation import validate_args

DEFAULT_BASH_TIMEOUT_SECONDS = 120.0
MAX_BASH_TIMEOUT_SECONDS = 600.0


class ToolError(Exception):
    """A problem the model (or a person) can fix; the message is shown to them verbatim."""


@dataclass
class ToolResult:
    output: str
    is_error: bool = False
    metadata: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def error(cls, message: str, **metadata: Any) -> ToolResult:
        return cls(output=message, is_error=True, metadata=dict(metadata))


@dataclass
class ToolContext:
    workspace: Path
    scratch_dir: Path
    viewed_files: set[Path] = field(default_factory=set)
    env_allow: set[str] = field(default_factory=set)
    bash_default_timeout: float = DEFAULT_BASH_TIMEOUT_SECONDS
    bash_max_timeout: float = MAX_BASH_TIMEOUT_SECONDS

    def __post_init__(self) -> None:
        # Every confinement check compares resolved paths, so the root must be resolved too.
        self.workspace = Path(self.workspace).resolve()
        self.scratch_dir = Path(self.scratch_dir)

    def mark_viewed(self, path: Path) -> None:
        self.viewed_files.add(path.resolve())

    def was_viewed(self, path: Path) -> bool:
        return path.resolve() in self.viewed_files


class Tool(ABC):
    """A built-in tool. Subclasses set the class attributes and implement `execute`."""

    name: ClassVar[str]
    description: ClassVar[str]
    parameters: ClassVar[dict[str, Any]]
    reads_only: ClassVar[bool] = False

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        """Validate and execute; bad input becomes an error result, never an exception."""
        problem = validate_args(self, args)
        if problem is not None:
            return ToolResult.error(problem)
        try:
            return await self.execute(args, ctx)
        except ToolError as exc:
            return ToolResult.error(str(exc))
        except OSError as exc:
            reason = exc.strerror or str(exc)
            where = f" ({exc.filename})" if exc.filename else ""
            return ToolResult.error(f"{self.name} failed: {reason}{where}")

    @abstractmethod
    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        """Do the work on already validated arguments; may raise ToolError."""

    @abstractmethod
    def describe_call(self, args: dict[str, Any], workspace: Path | None = None) -> str:
        """One line for approval prompts and permission rules; must not raise on bad args."""
