"""Before an "allow always" rule is saved to a config file: the change, as a diff, and a confirm.

Dismissed with True (save it) or False (back to the approval, nothing written).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Button, Static

from tui.screens.question import QuestionScreen
from tui.widgets.diff_view import DiffView


@dataclass(frozen=True)
class RuleSave:
    rule: str
    label: str  # "user config", "project config"
    target: Path
    diff: str  # what saving changes in `target`; "" when it holds the rule already
    note: str | None = None  # why the saved rule would not apply yet, if it would not


class SaveRuleScreen(QuestionScreen[RuleSave, bool]):
    DEFAULT_CSS = """
    SaveRuleScreen { align: center middle; background: $background 60%; }
    SaveRuleScreen > #dialog {
        width: 90%; max-width: 110; height: auto; max-height: 90%;
        padding: 1 2; border: thick $success; background: $surface;
    }
    SaveRuleScreen #title { text-style: bold; }
    SaveRuleScreen #target { color: $text-muted; margin: 0 0 1 0; }
    SaveRuleScreen #change { height: auto; max-height: 25; }
    SaveRuleScreen #buttons { height: auto; margin: 1 0 0 0; align-horizontal: center; }
    SaveRuleScreen #buttons Button { margin: 0 1; }
    """
    BINDINGS = [
        Binding("y,enter", "answer(True)", "Save"),
        Binding("n,escape", "answer(False)", "Back"),
    ]
    ANSWERS = {"save": True, "back": False}

    def compose(self) -> ComposeResult:
        request = self.request
        with Vertical(id="dialog"):
            yield Static(Text.assemble("Save ", (request.rule, "bold"), f" to the {request.label}?"), id="title")
            yield Static(Text(f"{request.target} — later sessions will allow it without asking"), id="target")
            if request.note:
                yield Static(Text(request.note, style="bold yellow"), id="note")
            with VerticalScroll(id="change"):
                if request.diff.strip():
                    yield DiffView(request.diff, id="diff")
                else:
                    yield Static(Text("The file has this rule already; saving changes nothing."), id="diff")
            with Horizontal(id="buttons"):
                yield Button("Save (y)", variant="success", id="save")
                yield Button("Back (n)", variant="primary", id="back")

    def on_mount(self) -> None:
        self.query_one("#save", Button).focus()
