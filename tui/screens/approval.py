"""Ask the user before a tool runs: the exact command or diff, then allow once, allow always, deny."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Button, Static

from agent.events import ApprovalRequested
from agent.permissions import rule_for_call
from tui import formatting
from tui.screens.question import QuestionScreen
from tui.widgets.diff_view import DiffView

Answer = str  # "once" | "always" | "deny", what ApprovalRequested.future expects


class ApprovalScreen(QuestionScreen[ApprovalRequested, Answer]):
    CSS_PATH = "approval.tcss"
    BINDINGS = [
        Binding("y,1", "answer('once')", "Allow once"),
        Binding("a,2", "answer('always')", "Allow always"),
        Binding("n,d,3,escape", "answer('deny')", "Deny"),
    ]
    ANSWERS = {"once": "once", "always": "always", "deny": "deny"}

    def compose(self) -> ComposeResult:
        request = self.request
        with Vertical(id="dialog"):
            yield Static(Text.assemble(("Allow ", ""), (request.name, "bold"), ("?", "")), id="title")
            yield Static(Text(request.reason), id="reason")
            with VerticalScroll(id="detail"):
                command = request.arguments.get("command") if request.name == "bash" else None
                if isinstance(command, str):
                    yield Static(Text(command), id="command")
                else:
                    yield Static(Text(request.summary), id="command")
                    if not request.diff:
                        yield Static(Text(formatting.compact_json(request.arguments, 2000)), id="arguments")
                if request.diff:
                    yield DiffView(request.diff, id="diff")
            rule = rule_for_call(request.name, request.summary)
            yield Static(Text.assemble(("Allow always adds the rule ", "dim"), (rule, "bold")), id="rule")
            with Horizontal(id="buttons"):
                yield Button("Allow once (y)", variant="primary", id="once")
                yield Button("Allow always (a)", variant="success", id="always")
                yield Button("Deny (n)", variant="error", id="deny")

    def on_mount(self) -> None:
        self.query_one("#once", Button).focus()
