"""One row per finished request (or burst of overlapping requests), newest at the bottom: what each cost
the server, which is where another agent's large prompts show."""

from __future__ import annotations

import time
from collections import deque

from textual.widgets import DataTable
from textual.widgets.data_table import RowKey

from server.traffic import RequestsFinished
from tui import formatting

MAX_ROWS = 200


class RequestLog(DataTable[str]):
    DEFAULT_CSS = """
    RequestLog { height: 1fr; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._keys: deque[RowKey] = deque()

    def on_mount(self) -> None:
        self.cursor_type = "row"
        self.add_columns("time", "prompt read", "cached", "context", "generated", "prefill s", "gen tok/s", "accept")

    def add_finished(self, finished: RequestsFinished, at: float | None = None) -> None:
        stamp = time.strftime("%H:%M:%S", time.localtime(time.time() if at is None else at))
        cached = "-" if finished.cached_tokens is None else formatting.count(finished.cached_tokens)
        key = self.add_row(
            stamp,
            formatting.count(finished.prompt_tokens),
            cached,
            formatting.count(finished.context_used),
            formatting.count(finished.generated_tokens),
            f"{finished.prompt_seconds:.1f}",
            formatting.rate(finished.generation_per_second),
            formatting.percent(finished.acceptance),
        )
        self._keys.append(key)
        self.move_cursor(row=self.row_count - 1)  # follow the newest, as a log does
        while len(self._keys) > MAX_ROWS:
            self.remove_row(self._keys.popleft())
