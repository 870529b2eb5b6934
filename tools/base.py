"""Core types shared by every built-in tool: the tool interface, its context and its result."""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from tools.defaults import BASH_TIMEOUT_SECONDS
from tools.sandbox import SandboxPolicy
from tools.schema_validation import validate_arguments

MAX_BASH_TIMEOUT_SECONDS = 600.0


def hostile_value_problem(value: Any, name: str = "") -> str | None:
    """Values JSON lets through that no file, command or session file can hold: NUL characters,
    unpaired surrogates, NaN and infinities. Named for the model, so it can send them again."""
    where = f"argument {name!r}" if name else "an argument"
    if isinstance(value, str):
        if "\0" in value:
            return f"{where} contains a NUL character, which no command or file name can hold; remove it"
        if any("\ud800" <= ch <= "\udfff" for ch in value):
            return f"{where} contains an unpaired surrogate (invalid Unicode); send valid UTF-8 text"
    elif isinstance(value, float) and not math.isfinite(value):
        return f"{where} is {value}, which is not a number JSON allows; send a finite number"
    elif isinstance(value, dict):
        for key, item in value.items():
            problem = hostile_value_problem(key, name) or hostile_value_problem(
                item, f"{name}.{key}" if name else str(key)
            )
            if problem:
                return problem
    elif isinstance(value, list):
        for index, item in enumerate(value):
            problem = hostile_value_problem(item, f"{name}[{index}]")
            if problem:
                return problem
    return None


def arguments_problem(name: str, schema: dict[str, Any], args: Any) -> str | None:
    """Why `args` cannot be run as they are (off the tool's schema, or holding hostile values),
    or None. Every tool's `run` asks this first, built-in (`Tool.run`) or MCP (`McpTool.run`)."""
    return validate_arguments(name, schema, args) or hostile_value_problem(args)


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
    bash_default_timeout: float = BASH_TIMEOUT_SECONDS
    bash_max_timeout: float = MAX_BASH_TIMEOUT_SECONDS
    # Every bash command runs under this; the agent setup derives it from the permission mode.
    sandbox: SandboxPolicy = field(default_factory=SandboxPolicy)
    # Called with a path before a file tool changes it, so undo can restore it even where
    # snapshots do not look (gitignored files); must not raise.
    before_write: Callable[[Path], None] | None = None

    def __post_init__(self) -> None:
        # Every confinement check compares resolved paths, so the root must be resolved too.
        self.workspace = Path(self.workspace).resolve()
        self.scratch_dir = Path(self.scratch_dir)

    def preserve(self, path: Path) -> None:
        if self.before_write is not None:
            self.before_write(path)

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
        problem = self.argument_problem(args)
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
        except Exception as exc:  # noqa: BLE001 - model input must never crash the loop
            return ToolResult.error(f"{self.name} failed on this input: {type(exc).__name__}: {exc}")

    def argument_problem(self, args: Any) -> str | None:
        """Why `args` cannot be run as they are (schema or hostile values), or None."""
        return arguments_problem(self.name, self.parameters, args)

    def preview(self, args: dict[str, Any], ctx: ToolContext) -> str | None:
        """What the call would change, for an approval prompt: a unified diff, or None.

        None when the tool changes no file, when the call changes nothing, and when `run`
        would refuse the call. Computed by the tool's own logic, reading but never writing;
        must not raise.
        """
        return None

    @abstractmethod
    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        """Do the work on already validated arguments; may raise ToolError."""

    @abstractmethod
    def describe_call(self, args: dict[str, Any], workspace: Path | None = None) -> str:
        """One line for approval prompts and permission rules; must not raise on bad args."""
