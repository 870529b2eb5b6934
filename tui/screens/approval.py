"""Ask the user before a tool runs: the exact command or diff, then allow once, allow always, deny.

Where the runtime can save rules (``tui.runtime.RuleStore``), "allow always" comes in more forms:
for this session only, or also saved to one of the runtime's config files. Saving shows the file's
change first (``SaveRuleScreen``) and writes only on a confirm; the answer to the agent is
"always" either way, so this session allows the rule at once.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Button, Static

from agent.approval import Answer, ApprovalRequest
from tools.terminal_text import terminal_safe
from tui import formatting
from tui.runtime import RuleStore
from tui.screens.question import QuestionScreen
from tui.screens.save_rule import RuleSave, SaveRuleScreen
from tui.widgets.diff_view import DiffView

RESERVED_KEYS = frozenset("yand123")


def save_keys(labels: list[str]) -> list[str]:
    """One key per save target: its label's first letter where free ("u", "p"), else a digit."""
    keys: list[str] = []
    for index, label in enumerate(labels):
        letter = label[:1].lower()
        free = letter.isalpha() and letter not in RESERVED_KEYS and letter not in keys
        keys.append(letter if free else str(4 + index))
    return keys


class ApprovalScreen(QuestionScreen[ApprovalRequest, Answer]):
    CSS_PATH = "approval.tcss"
    BINDINGS = [
        Binding("y,1", "answer('once')", "Allow once"),
        Binding("a,2", "answer('always')", "Allow always"),
        Binding("n,d,3,escape", "answer('deny')", "Deny"),
    ]
    ANSWERS = {"once": "once", "always": "always", "deny": "deny"}

    def __init__(self, request: ApprovalRequest, rules: RuleStore | None = None) -> None:
        super().__init__(request)
        self.rules = rules
        self.rule = request.rule
        self.targets = _targets(rules)
        self.keys = save_keys([label for label, _ in self.targets])

    def compose(self) -> ComposeResult:
        request = self.request
        with Vertical(id="dialog"):
            yield Static(Text.assemble(("Allow ", ""), (request.name, "bold"), ("?", "")), id="title")
            yield Static(Text(terminal_safe(request.reason)), id="reason")
            with VerticalScroll(id="detail"):
                command = request.arguments.get("command") if request.name == "bash" else None
                if isinstance(command, str):
                    yield Static(Text(terminal_safe(command)), id="command")
                else:
                    yield Static(Text(terminal_safe(request.summary)), id="command")
                    if not request.diff:
                        yield Static(
                            Text(terminal_safe(formatting.compact_json(request.arguments, 2000))), id="arguments"
                        )
                if request.diff:
                    yield DiffView(terminal_safe(request.diff), id="diff")
            yield Static(self._rule_text(), id="rule")
            with Horizontal(id="buttons"):
                yield Button("Allow once (y)", variant="primary", id="once")
                always = "Allow always, this session (a)" if self.targets else "Allow always (a)"
                yield Button(always, variant="success", id="always")
                yield Button("Deny (n)", variant="error", id="deny")
            if self.targets:
                with Horizontal(id="save-buttons"):
                    for index, (label, _) in enumerate(self.targets):
                        yield Button(f"Always, and save to {label} ({self.keys[index]})", id=f"save-{index}")

    def _rule_text(self) -> Text:
        text = Text.assemble(("Allow always adds the rule ", "dim"), (self.rule, "bold"))
        if self.targets:
            text.append(" for this session; saving it keeps it for later sessions too", style="dim")
        return text

    def on_mount(self) -> None:
        self.query_one("#once", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        button_id = event.button.id or ""
        if button_id.startswith("save-"):
            event.stop()
            self.action_save(int(button_id.removeprefix("save-")))
            return
        super().on_button_pressed(event)

    def on_key(self, event: events.Key) -> None:
        if event.key in self.keys:
            event.stop()
            self.action_save(self.keys.index(event.key))

    def action_save(self, index: int) -> None:
        """Show what saving to target `index` changes; save and allow once the user confirms."""
        if self.rules is None or not 0 <= index < len(self.targets):
            return
        label, target = self.targets[index]
        try:
            diff = self.rules.preview_rule(self.rule, target)
            note = self.rules.rule_note(target)
        except Exception as exc:  # noqa: BLE001 - the runtime's reason, shown to the person
            self.notify(f"cannot save to {target}: {exc}", severity="error", markup=False)
            return
        request = RuleSave(self.rule, label, target, diff, note)
        self.app.push_screen(SaveRuleScreen(request), partial(self._confirmed, request))

    def _confirmed(self, request: RuleSave, save: bool | None) -> None:
        if not save or self.rules is None:
            return
        try:
            self.rules.save_rule(request.rule, request.target)
        except Exception as exc:  # noqa: BLE001 - as above
            self.notify(f"could not save {request.rule} to {request.target}: {exc}", severity="error", markup=False)
            return
        # The rule is the model's text: shown as it is, never read as markup.
        self.notify(f"saved {request.rule} to {request.target}", markup=False)
        self.dismiss("always")


def _targets(rules: RuleStore | None) -> list[tuple[str, Path]]:
    if rules is None:
        return []
    try:
        return list(rules.rule_targets())
    except Exception:  # noqa: BLE001 - a runtime that cannot say offers no saving
        return []
