"""Before the MCP servers a repository's own .mcp.json declares are started: ask once.

Such a server runs a command the repository chose; the answer is remembered per repository and
server list by the MCP layer, so this shows only for a new or changed list.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Static

from tools.mcp.approvals import ApprovalRequest
from tui.screens.question import QuestionScreen


class McpApprovalScreen(QuestionScreen[ApprovalRequest, bool]):
    CSS_PATH = "mcp_approval.tcss"
    BINDINGS = [
        Binding("y", "answer(True)", "Start them"),
        Binding("n,escape", "answer(False)", "Not now"),
    ]
    ANSWERS = {"yes": True, "no": False}

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static("Start this repository's MCP servers?", id="title")
            yield Static(Text(f"{self.request.config_file} asks to run:", style="dim"), id="source")
            yield Static(Text("\n".join(self.request.lines())), id="servers")
            yield Static(Text("The answer is remembered for this repository and this list.", style="dim"))
            with Horizontal(id="buttons"):
                yield Button("Start them (y)", variant="warning", id="yes")
                yield Button("Not now (n)", variant="primary", id="no")

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()
