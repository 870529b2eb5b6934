"""The multi-line prompt: Enter sends, Shift+Enter or Ctrl+J adds a line, Up/Down walk the history.

The history is this session's prompts after those of earlier sessions in the same repository
(``tui.prompt_history``, when the app was given a file). An ``@`` typed at the start of a word
posts ``MentionStarted``; the screen answers with a path for ``complete_mention``.
"""

from __future__ import annotations

from textual import events
from textual.binding import Binding
from textual.widgets import TextArea

from tui import input_priority
from tui.attachments import mention_for
from tui.messages import MentionStarted, PromptSubmitted
from tui.prompt_history import PromptHistory


class PromptInput(TextArea):
    DEFAULT_CSS = """
    PromptInput {
        height: auto;
        min-height: 3;
        max-height: 10;
        border: tall $accent;
        padding: 0 1;
    }
    PromptInput:disabled { border: tall $panel; }
    """

    # Shown in the footer; Enter and the history keys are handled in _on_key because TextArea
    # would otherwise consume them as text editing.
    BINDINGS = [
        Binding("enter", "submit", "Send", priority=False),
        Binding("ctrl+j", "newline", "New line", key_display="^j"),
        Binding("shift+enter", "newline", "New line", show=False),
    ]

    def __init__(self, *, id: str | None = None, placeholder: str = "", history: PromptHistory | None = None) -> None:
        super().__init__(
            id=id,
            soft_wrap=True,
            show_line_numbers=False,
            tab_behavior="focus",
            placeholder=placeholder,
            compact=False,
        )
        self.history_store = history or PromptHistory()
        self.prompt_history: list[str] = self.history_store.load()
        # Where Up/Down are in the history; len(history) is the prompt being written.
        self._position = len(self.prompt_history)
        self._draft = ""

    async def _on_key(self, event: events.Key) -> None:
        # The repaint after this one shows the key: streamed output may go ahead then.
        self.call_after_refresh(input_priority.key_shown)
        key = event.key
        if key == "enter":
            event.stop()
            event.prevent_default()
            self.action_submit()
            return
        if key in ("ctrl+j", "shift+enter"):
            event.stop()
            event.prevent_default()
            self.action_newline()
            return
        row, _ = self.cursor_location
        if key == "up" and row == 0 and self.prompt_history and self._position > 0:
            event.stop()
            event.prevent_default()
            self._recall(self._position - 1)
            return
        if key == "down" and row == self.document.line_count - 1 and self._position < len(self.prompt_history):
            event.stop()
            event.prevent_default()
            self._recall(self._position + 1)
            return
        starts_mention = event.character == "@" and self._at_word_start()
        await super()._on_key(event)
        if starts_mention:
            self.post_message(MentionStarted())

    def _at_word_start(self) -> bool:
        row, column = self.cursor_location
        if self.selected_text:
            return False
        before = self.document.get_line(row)[:column]
        return not before or before[-1].isspace()

    def complete_mention(self, path: str) -> None:
        """Put ``@path`` where the ``@`` just typed is (or at the cursor, if it has gone)."""
        row, column = self.cursor_location
        line = self.document.get_line(row)
        start = (row, column - 1) if column and line[column - 1] == "@" else (row, column)
        after = line[column : column + 1]
        spacer = "" if after.isspace() else " "
        self.replace(mention_for(path) + spacer, start, (row, column), maintain_selection_offset=False)

    def action_newline(self) -> None:
        start, end = self.selection
        self.replace("\n", start, end, maintain_selection_offset=False)

    def action_submit(self) -> None:
        text = self.text
        if not text.strip():
            return
        if not self.prompt_history or self.prompt_history[-1] != text:
            self.prompt_history.append(text)
            self.history_store.append(text)
        self._position = len(self.prompt_history)
        self._draft = ""
        self.clear()
        self.post_message(PromptSubmitted(text))

    def _recall(self, position: int) -> None:
        if self._position == len(self.prompt_history):
            self._draft = self.text  # keep what was being written, as shells do
        self._position = position
        self.text = self._draft if position == len(self.prompt_history) else self.prompt_history[position]
        self.move_cursor(self.document.end)

    def remember(self, entries: list[str]) -> None:
        """Seed the history (e.g. with the prompts of a resumed session) with what it lacks."""
        known = set(self.prompt_history)
        self.prompt_history = [*(entry for entry in entries if entry not in known), *self.prompt_history]
        self._position = len(self.prompt_history)
