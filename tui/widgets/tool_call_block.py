"""One tool call: name, what it does, its arguments, a running indicator, then duration and output."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.timer import Timer
from textual.widgets import Collapsible, Static

from tui import formatting
from tui.widgets.diff_view import DiffView
from tui.widgets.entry import entry_css

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
# Outputs up to this many lines show in full; longer ones fold into an expandable block.
INLINE_LINES = 8
MAX_OUTPUT_CHARS = 200_000


class ToolCallBlock(Vertical):
    DEFAULT_CSS = (
        entry_css("ToolCallBlock", border_left="outer $secondary", background="$surface")
        + """
    ToolCallBlock.-ok { border-left: outer $success; }
    ToolCallBlock.-error { border-left: outer $error; }
    ToolCallBlock.-waiting { border-left: outer $warning; }
    ToolCallBlock > .tool-header { height: auto; }
    ToolCallBlock > .tool-args { height: auto; color: $text-muted; }
    ToolCallBlock > .tool-output { height: auto; color: $text; }
    ToolCallBlock > Collapsible { padding: 0; border: none; background: transparent; }
    ToolCallBlock > Collapsible > Contents { padding: 0 0 0 2; }
    ToolCallBlock > DiffView { margin: 0 0 0 0; }
    """
    )

    def __init__(self, call_id: str, name: str, summary: str = "", arguments: dict[str, Any] | None = None) -> None:
        super().__init__(classes="-running")
        self.call_id = call_id
        self.tool_name = name
        self.summary = summary
        self.arguments = arguments or {}
        self.state = "running"  # running | waiting | ok | error
        self.duration_s: float | None = None
        self.output: str | None = None
        self.diff: str | None = None
        self._frame = 0
        self._spinner: Timer | None = None
        self._header = Static(self._header_text(), classes="tool-header")

    def compose(self) -> ComposeResult:
        yield self._header
        if self.arguments and _args_add_something(self.summary, self.arguments):
            yield Static(Text(formatting.compact_json(self.arguments)), classes="tool-args")

    def on_mount(self) -> None:
        if self.state in ("running", "waiting"):
            self._spinner = self.set_interval(0.1, self._spin)

    def _spin(self) -> None:
        self._frame = (self._frame + 1) % len(SPINNER)
        self._header.update(self._header_text())

    def _header_text(self) -> Text:
        marks = {"running": SPINNER[self._frame], "waiting": "?", "ok": "✓", "error": "✗"}
        styles = {"running": "bold cyan", "waiting": "bold yellow", "ok": "bold green", "error": "bold red"}
        text = Text()
        text.append(marks[self.state] + " ", style=styles[self.state])
        text.append(self.tool_name, style="bold")
        if self.summary:
            text.append("  " + self.summary)
        if self.state == "running":
            text.append("  running…", style="dim")
        elif self.state == "waiting":
            text.append("  waiting for approval", style="yellow")
        elif self.duration_s is not None:
            text.append(f"  {formatting.duration(self.duration_s)}", style="dim")
        return text

    def set_waiting(self) -> None:
        self._set_state("waiting")

    def set_running(self) -> None:
        self._set_state("running")

    def _set_state(self, state: str) -> None:
        self.state = state
        self.set_class(state == "running", "-running")
        self.set_class(state == "waiting", "-waiting")
        self.set_class(state == "ok", "-ok")
        self.set_class(state == "error", "-error")
        self._header.update(self._header_text())

    async def finish(self, output: str, is_error: bool, duration_s: float | None, diff: str | None = None) -> None:
        if self._spinner is not None:
            self._spinner.stop()
            self._spinner = None
        self.output = output
        self.duration_s = duration_s
        self.diff = diff
        self._set_state("error" if is_error else "ok")
        widgets: list[Static | Collapsible] = []
        if diff:
            widgets.append(DiffView(diff))
        body = output[:MAX_OUTPUT_CHARS].rstrip("\n")
        lines = body.splitlines()
        if body and len(lines) <= INLINE_LINES:
            widgets.append(Static(Text(body), classes="tool-output"))
        elif body:
            widgets.append(
                Collapsible(
                    Static(Text(body), classes="tool-output"),
                    title=f"output · {len(lines)} lines",
                    collapsed=True,
                )
            )
        if widgets:
            await self.mount_all(widgets)


def _args_add_something(summary: str, arguments: dict[str, Any]) -> bool:
    """The summary often is the one argument (a command, a path); repeating it is noise."""
    values = [str(v) for v in arguments.values()]
    return not (len(values) == 1 and values[0].strip() == summary.strip())
