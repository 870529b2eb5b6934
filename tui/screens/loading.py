"""Shown while the model server starts or the endpoint is checked; the chat opens once it serves."""

from __future__ import annotations

import time

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import Screen
from textual.widgets import Footer, LoadingIndicator, Static

from server.supervisor import SupervisorStatus
from tui.widgets.server_status import ServerStatusView


class LoadingScreen(Screen[None]):
    CSS_PATH = "loading.tcss"
    BINDINGS = [Binding("q", "app.quit", "Quit")]

    def __init__(self, target: str) -> None:
        super().__init__()
        self.target = target
        self.started = time.monotonic()
        self.state = "starting"
        self.failed = False

    def compose(self) -> ComposeResult:
        with Vertical(id="box"):
            yield Static("localagent", id="name")
            yield Static(Text(f"starting or attaching to {self.target}"), id="target")
            yield ServerStatusView(id="status")
            yield LoadingIndicator(id="spinner")
            yield Static(id="message")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(ServerStatusView).show("starting", label=self.target)

    def show_status(self, status: SupervisorStatus) -> None:
        self.state = str(status.state)
        self.query_one(ServerStatusView).show(self.state, restarts=status.restarts, pid=status.pid, label=self.target)
        if status.message:
            self.query_one("#message", Static).update(Text(status.message, style="dim"))

    def show_error(self, message: str) -> None:
        self.failed = True
        self.query_one("#spinner").display = False
        self.query_one(ServerStatusView).show("failed", label=self.target)
        self.query_one("#message", Static).update(
            Text.assemble(("could not start: ", "bold red"), (message, "red"), ("\n\npress q to quit", "dim"))
        )
