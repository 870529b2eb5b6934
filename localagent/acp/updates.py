"""The agent's events as ACP session updates: text and thought chunks, tool calls with their kind,
locations and (for edits) the file's text before and after, and the server's live numbers.

Pure translation, no I/O but reading an edited file's text: the ACP session (localagent.acp.session)
sends what these functions build.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp import (
    start_tool_call,
    text_block,
    tool_content,
    tool_diff_content,
    update_agent_message_text,
    update_agent_thought_text,
    update_tool_call,
)
from acp.schema import ToolCallLocation, ToolCallProgress, ToolCallStart, ToolCallUpdate, ToolKind

from agent.events import Metrics, ToolCallFinished, ToolCallStarted
from agent.request_totals import RequestTotals
from tools.regular_files import read_regular_file
from tools.terminal_text import one_line_safe, terminal_safe

# Tool output shown in the editor; the model got all of it.
MAX_OUTPUT_CHARS = 20_000
# An edited file larger than this is shown as text output, not as a before/after diff.
MAX_DIFF_BYTES = 1 << 20

_KINDS: dict[str, ToolKind] = {
    "view": "read",
    "grep": "search",
    "glob": "search",
    "create": "edit",
    "edit": "edit",
    "insert": "edit",
    "bash": "execute",
}
_PATH_ARGUMENTS = ("path", "file_path")


def tool_kind(name: str) -> ToolKind:
    return _KINDS.get(name, "other")


def locations(arguments: dict[str, Any], workspace: Path) -> list[ToolCallLocation]:
    """The file a call names, as an absolute path (editors open it), when it names one."""
    for key in _PATH_ARGUMENTS:
        value = arguments.get(key)
        if isinstance(value, str) and value.strip() and "\x00" not in value:
            path = Path(value)
            return [ToolCallLocation(path=str(path if path.is_absolute() else workspace / path))]
    return []


def file_text(path: str) -> str | None:
    """The text of an edited file, for its diff; None when it is absent, not a file or too large."""
    try:
        read = read_regular_file(Path(path), MAX_DIFF_BYTES)
    except OSError:
        return None
    if read.unread:
        return None
    return read.data.decode("utf-8", errors="replace")


@dataclass
class ToolCallView:
    """What the editor was told about one call, to follow it with updates."""

    call_id: str
    kind: ToolKind
    path: str | None
    before: str | None = None


def title(name: str, summary: str) -> str:
    """What the editor lists: the tool and what it works on ("edit app.py", "bash pytest -q")."""
    shown = one_line_safe(summary)
    return shown if shown.startswith(name) else f"{name} {shown}".strip()


def started(event: ToolCallStarted, workspace: Path) -> tuple[ToolCallStart, ToolCallView]:
    kind = tool_kind(event.name)
    where = locations(event.arguments, workspace)
    path = where[0].path if where else None
    view = ToolCallView(event.call_id, kind, path, file_text(path) if kind == "edit" and path else None)
    update = start_tool_call(
        event.call_id,
        title(event.name, event.summary),
        kind=kind,
        status="in_progress",
        locations=where or None,
        raw_input=event.arguments,
    )
    update.field_meta = {"localagent": {"tool": event.name}}
    return update, view


def finished(event: ToolCallFinished, view: ToolCallView | None) -> ToolCallProgress:
    # Editors such as Toad draw these in a terminal: control characters arrive as visible text.
    shown = terminal_safe(event.output)
    output = shown if len(shown) <= MAX_OUTPUT_CHARS else shown[:MAX_OUTPUT_CHARS] + "\n[…]"
    content: list[Any] = [tool_content(text_block(output))] if output else []
    if view is not None and view.kind == "edit" and view.path and not event.is_error:
        after = file_text(view.path)
        if after is not None and after != view.before:
            content.insert(0, tool_diff_content(view.path, after, view.before))
    return update_tool_call(
        event.call_id,
        status="failed" if event.is_error else "completed",
        content=content or None,
        raw_output={"output": output, "is_error": event.is_error, "duration_s": round(event.duration_s, 3)},
    )


def permission_call(call_id: str, name: str, summary: str, reason: str, diff: str | None) -> ToolCallUpdate:
    """The call a permission request is about: its title, why the policy asks, and the change."""
    text = terminal_safe(f"{reason}\n\n```diff\n{diff.rstrip()}\n```" if diff else reason)
    return ToolCallUpdate(
        tool_call_id=call_id,
        title=title(name, summary),
        kind=tool_kind(name),
        status="pending",
        content=[tool_content(text_block(text))],
    )


def message(text: str) -> Any:
    return update_agent_message_text(terminal_safe(text))


def thought(text: str) -> Any:
    return update_agent_thought_text(terminal_safe(text))


@dataclass
class LiveNumbers:
    """The server's numbers during a turn, for the `_meta` of updates and the turn's summary."""

    last: Metrics | None = None
    turn: RequestTotals = field(default_factory=RequestTotals)
    prompt_tokens: int = 0
    cached_tokens: int = 0
    completion_tokens: int = 0

    def take(self, metrics: Metrics) -> None:
        if self.last is not None and metrics.predicted_n < self.last.predicted_n:
            self.end_request()  # a new request's counts start again from zero
        self.last = metrics

    def end_request(self) -> None:
        if self.last is not None:
            self.turn.add(self.last)
            self.prompt_tokens += self.last.prompt_n + self.last.cache_n
            self.cached_tokens += self.last.cache_n
            self.completion_tokens += self.last.predicted_n
        self.last = None

    def meta(self) -> dict[str, Any]:
        """``_meta.localagent.metrics``: the current request's live numbers."""
        m = self.last
        if m is None:
            return {}
        acceptance = m.draft_n_accepted / m.draft_n if m.draft_n and m.draft_n_accepted is not None else None
        return {
            "localagent": {
                "metrics": {
                    "tokens_per_second": m.predicted_per_second,
                    "generated": m.predicted_n,
                    "drafted": m.draft_n,
                    "accepted": m.draft_n_accepted,
                    "acceptance": acceptance,
                    "context_used": m.context_used,
                    "n_ctx": m.n_ctx,
                }
            }
        }

    def summary(self) -> dict[str, Any]:
        """The turn's totals, for the prompt response's `_meta`, with a line to show."""
        self.end_request()
        totals = self.turn
        tps, acceptance = totals.tokens_per_second, totals.acceptance
        parts = [f"{self.completion_tokens} tokens"]
        if tps:
            parts.append(f"{tps:.1f} tok/s")
        if acceptance is not None:
            parts.append(f"{acceptance * 100:.0f}% of {totals.drafted} drafted accepted")
        return {
            "localagent": {
                "summary": ", ".join(parts),
                "tokens_per_second": tps,
                "generated": self.completion_tokens,
                "drafted": totals.drafted,
                "accepted": totals.accepted,
                "acceptance": acceptance,
                "prompt_tokens": self.prompt_tokens,
                "cached_tokens": self.cached_tokens,
            }
        }
