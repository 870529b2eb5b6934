"""The assistant's answer, streamed as Markdown.

The tail of the answer is a Markdown widget fed through ``Markdown.get_stream``, which appends to
the document instead of re-rendering it. Three things keep this cheap at thousands of tokens/s:

- tokens are gathered here and handed to the stream at most ~30 times a second, and not again
  before the screen has been repainted: handing over every token costs an event-loop turn per
  token, and appends queued faster than frames are drawn starve the repaint (and with it the echo
  of the user's keys);
- Textual lays out every widget on each layout pass, and a Markdown document is a widget per
  block. So once the live tail holds ``SEGMENT_CHARS`` and a block has just ended (outside any code
  fence), the finished text is *sealed* into one ``SealedMarkdown`` widget and the live tail starts
  afresh. Only the last ~1,500 characters are ever live Markdown widgets;
- when the app falls behind, whole finished segments go straight to sealed widgets without ever
  being built as Markdown block widgets.
"""

from __future__ import annotations

import asyncio
import re
import time

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.timer import Timer
from textual.widgets import Markdown
from textual.widgets.markdown import MarkdownStream

from tui import input_priority
from tui.widgets.entry import entry_css
from tui.widgets.sealed_markdown import SealedMarkdown

FLUSH_EVERY_S = 1 / 30
# While the user types the answer holds its text back, but never longer than this between updates.
MAX_HOLD_S = 0.4
SEGMENT_CHARS = 1500
_FENCE = re.compile(r"^ {0,3}(```|~~~)", re.MULTILINE)


def fences_balanced(text: str) -> bool:
    return len(_FENCE.findall(text)) % 2 == 0


def segment_cuts(text: str, size: int = SEGMENT_CHARS) -> list[int]:
    """Offsets at which ``text`` may be cut into finished segments of at least ``size`` characters:
    each just after a blank line that is outside any code fence."""
    cuts: list[int] = []
    start = 0
    while len(text) - start >= size:
        index = text.find("\n\n", start + size - 2)
        while index != -1 and not fences_balanced(text[start : index + 2]):
            index = text.find("\n\n", index + 2)
        if index == -1:
            break
        start = index + 2
        cuts.append(start)
    return cuts


class MarkdownSegment(Markdown):
    DEFAULT_CSS = """
    MarkdownSegment {
        height: auto;
        margin: 0;
        padding: 0;
        background: transparent;
    }
    """


class AssistantMessage(Vertical):
    DEFAULT_CSS = entry_css("AssistantMessage")

    def __init__(self, markdown: str = "") -> None:
        super().__init__()
        self._parts: list[str] = [markdown] if markdown else []
        self._initial = markdown
        self._pending: list[str] = []
        self._live = MarkdownSegment(markdown)
        self._live_text = markdown
        self._stream: MarkdownStream | None = None
        self._last_flush = 0.0
        self._flush_timer: Timer | None = None
        self._waiting_for_paint = False
        # Flushes come from the worker (write, finish) and from timers: never interleave them.
        self._lock = asyncio.Lock()

    def compose(self) -> ComposeResult:
        yield self._live

    @property
    def text(self) -> str:
        """Everything written so far, shown yet or not."""
        return "".join(self._parts)

    @property
    def source(self) -> str:
        """What the widgets hold now."""
        return "".join(
            child.source for child in self.children if isinstance(child, (MarkdownSegment, SealedMarkdown))
        )

    @property
    def streaming(self) -> bool:
        return self._stream is not None or bool(self._pending)

    async def write(self, fragment: str) -> None:
        self._parts.append(fragment)
        self._pending.append(fragment)
        if self._waiting_for_paint or self._flush_timer is not None:
            return  # a flush is already due
        wait = self._wait()
        if wait <= 0:
            await self._flush()
        else:
            # A pause in the stream (a slow token, a tool call) must not leave text unshown.
            self._flush_timer = self.set_timer(wait, self._flush)

    def _wait(self) -> float:
        """Seconds until the next flush may happen."""
        since = time.monotonic() - self._last_flush
        hold = min(input_priority.hold_remaining(), MAX_HOLD_S - since)
        return max(FLUSH_EVERY_S - since, hold)

    def _painted(self) -> None:
        self._waiting_for_paint = False
        if self._pending and self._flush_timer is None:
            wait = max(0.001, self._wait())
            self._flush_timer = self.set_timer(wait, self._flush)

    async def _flush(self, force: bool = False) -> None:
        async with self._lock:
            await self._flush_locked(force)

    async def _flush_locked(self, force: bool) -> None:
        if self._flush_timer is not None:
            self._flush_timer.stop()
            self._flush_timer = None
        if not self._pending or (self._waiting_for_paint and not force):
            return
        held = self._wait()
        if held > 0 and not force:
            self._flush_timer = self.set_timer(held, self._flush)
            return
        self._last_flush = time.monotonic()
        self._waiting_for_paint = True
        self.call_after_refresh(self._painted)
        pending = "".join(self._pending)
        self._pending.clear()
        text = self._live_text + pending
        cuts = segment_cuts(text)
        if not cuts:
            await self._append_live(pending)
            return
        # Seal every finished segment (the live tail's text included) and restart the tail.
        await self._stop_stream()
        bounds = [0, *cuts]
        sealed = [SealedMarkdown(text[a:b]) for a, b in zip(bounds, bounds[1:])]
        await self.mount_all(sealed, before=self._live)
        await self._live.remove()
        self._live = MarkdownSegment()
        self._live_text = ""
        await self.mount(self._live)
        await self._append_live(text[cuts[-1] :])

    async def _append_live(self, text: str) -> None:
        if not text:
            return
        if self._stream is None:
            self._stream = Markdown.get_stream(self._live)
        self._live_text += text
        await self._stream.write(text)

    async def _stop_stream(self) -> None:
        stream, self._stream = self._stream, None
        if stream is not None:
            await stream.stop()

    async def finish(self) -> None:
        """Show everything that is pending and close the stream."""
        async with self._lock:
            await self._flush_locked(force=True)
            await self._stop_stream()
