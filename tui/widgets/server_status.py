"""The model server's state in one line: starting, loading, ready, restarting, down or failed."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

STATE_STYLES = {
    "starting": "yellow",
    "loading": "yellow",
    "ready": "green",
    "restarting": "bold yellow",
    "down": "red",
    "failed": "bold red",
}


def status_text(
    state: str, *, restarts: int = 0, pid: int | None = None, label: str = "", managed: bool = True
) -> Text:
    """Two lines: the state (and which server), then the process and its restart count."""
    text = Text()
    text.append("● ", style=STATE_STYLES.get(state, "dim"))
    text.append(state, style=STATE_STYLES.get(state, "bold"))
    if label:
        text.append(f" · {label}", style="bold")
    text.append("\n")
    if not managed:
        text.append("not managed by this session", style="dim")
        return text
    if pid is not None:
        text.append(f"pid {pid} · ", style="dim")
    text.append(f"{restarts} restart{'' if restarts == 1 else 's'}", style="bold red" if restarts else "dim")
    return text


class ServerStatusView(Static):
    DEFAULT_CSS = """
    ServerStatusView { height: auto; }
    """

    def show(
        self, state: str, *, restarts: int = 0, pid: int | None = None, label: str = "", managed: bool = True
    ) -> None:
        self.update(status_text(state, restarts=restarts, pid=pid, label=label, managed=managed))
