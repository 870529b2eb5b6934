"""The ``@`` file picker: type to narrow the workspace's files, Enter attaches the highlighted one.

The files are the ones grep and glob see (``tools.file_listing``: ripgrep, .gitignore honoured,
symlinks neither listed nor followed). The screen is dismissed with the chosen workspace-relative
path, or None (Esc).
"""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from tools.base import ToolError
from tools.file_listing import list_files
from tui.file_ranking import rank_paths

SHOWN = 50


class FilePickerScreen(ModalScreen[str | None]):
    DEFAULT_CSS = """
    FilePickerScreen { align: center middle; background: $background 40%; }
    FilePickerScreen > #picker {
        width: 90%; max-width: 100; height: auto; max-height: 80%;
        padding: 0 1; border: round $accent; background: $surface;
    }
    FilePickerScreen #picker-title { color: $text-muted; }
    FilePickerScreen #picker-query { border: none; height: 1; padding: 0; margin: 0 0 1 0; }
    FilePickerScreen #picker-files { height: auto; max-height: 20; border: none; }
    """
    BINDINGS = [
        Binding("escape", "dismiss_none", "Cancel"),
        Binding("down", "move(1)", "Next", show=False),
        Binding("up", "move(-1)", "Previous", show=False),
    ]

    def __init__(self, workspace: Path, query: str = "") -> None:
        super().__init__()
        self.workspace = workspace
        self.initial_query = query
        self.paths: list[str] = []
        self.loaded = False

    def compose(self) -> ComposeResult:
        with Vertical(id="picker"):
            yield Static(Text("Attach a file: type to narrow, Enter picks, Esc cancels"), id="picker-title")
            yield Input(self.initial_query, placeholder="listing files…", id="picker-query")
            yield OptionList(id="picker-files")

    def on_mount(self) -> None:
        self.query_one(Input).focus()
        self._load()

    @work(exclusive=True, group="picker", exit_on_error=False)
    async def _load(self) -> None:
        try:
            files = await list_files(self.workspace)
        except ToolError as exc:
            self.query_one("#picker-title", Static).update(Text(str(exc), style="red"))
            return
        self.paths = [path.relative_to(self.workspace).as_posix() for path in files]
        self.loaded = True
        self.query_one(Input).placeholder = f"{len(self.paths)} files"
        self._show(self.query_one(Input).value)

    def _show(self, query: str) -> None:
        options = self.query_one(OptionList)
        ranked = rank_paths(query, self.paths, SHOWN)
        options.set_options(Option(Text(path), id=path) for path in ranked)
        if ranked:
            options.highlighted = 0

    @on(Input.Changed, "#picker-query")
    def _query_changed(self, event: Input.Changed) -> None:
        if self.loaded:
            self._show(event.value)

    @on(Input.Submitted, "#picker-query")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        options = self.query_one(OptionList)
        if options.highlighted is not None and options.option_count:
            self.dismiss(options.get_option_at_index(options.highlighted).id)

    @on(OptionList.OptionSelected)
    def _picked(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(event.option.id)

    def action_move(self, step: int) -> None:
        options = self.query_one(OptionList)
        if step > 0:
            options.action_cursor_down()
        else:
            options.action_cursor_up()

    def action_dismiss_none(self) -> None:
        self.dismiss(None)
