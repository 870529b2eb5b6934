"""The assistant's answer, streamed as Markdown.

The answer is a column of ``MarkdownLines`` widgets: the last one takes the new text, and once it
holds enough finished blocks the next batch starts a new one below it (a widget whose size stays
the same is drawn from its cached lines, so the older part of a long answer costs nothing per
frame; the share each one holds grows with the answer, so a long answer stays a few widgets for
the layout to place).

Tokens are gathered here and shown in batches, one per frame:

- a batch is rendered a slice at a time (``SLICE_S``), the event loop free between slices, and
  added to the widgets in one step once it is ready: a key typed meanwhile waits for one slice,
  not for the whole batch;
- the next batch starts ``FLUSH_EVERY_S`` after the last at the soonest, not before the screen
  has been repainted, not while a key is on its way to the screen (``tui.input_priority``), and
  no sooner than ``FRAME_FACTOR`` times what the last repaint took: when the answer scrolls by
  many lines at each frame (a fast stream) every frame repaints the whole conversation, and fewer,
  larger frames leave the loop free for keys most of the time;
- a pause in the stream (a slow token, a tool call) still shows what came within a moment, and
  ``finish`` (the end of the message, or a cancelled turn) shows everything left.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.timer import Timer

from tui import input_priority
from tui.markdown_blocks import split_blocks
from tui.widgets.entry import entry_css
from tui.widgets.streamed_markdown import MarkdownLines

FLUSH_EVERY_S = 0.06
FRAME_FACTOR = 3.0
MAX_FRAME_GAP_S = 0.2
SLICE_S = 0.006
# The pause between two slices of a batch, and how often a batch held back for a key looks again.
SLICE_GAP_S = 0.001
KEY_POLL_S = 0.004
# The finished Markdown one widget holds before the next starts: at least this, and at least
# this share of the answer so far.
CHUNK_CHARS = 1200
CHUNK_SHARE = 0.3


@dataclass
class _Batch:
    """Text taken for the next frame: finished blocks and the open block after them, for
    ``target`` (the last widget, or a new one that will follow it)."""

    target: MarkdownLines
    blocks: list[str]
    tail: str
    prepared: int = 0

    def prepare(self, budget_s: float) -> bool:
        """Render pieces until ``budget_s`` has passed; True once all are ready."""
        deadline = time.monotonic() + budget_s
        pieces = [*self.blocks, self.tail]
        while self.prepared < len(pieces):
            if time.monotonic() >= deadline:
                return False
            self.target.prepare(pieces[self.prepared])
            self.prepared += 1
        return True


class AssistantMessage(Vertical):
    DEFAULT_CSS = entry_css("AssistantMessage")

    def __init__(self, markdown: str = "") -> None:
        super().__init__()
        self._parts: list[str] = [markdown] if markdown else []
        self._length = len(markdown)
        blocks, self._tail = split_blocks(markdown)
        self._chunks = _chunked(blocks, self._tail)
        self._pending: list[str] = []
        self._batch: _Batch | None = None
        self._open = False
        self._timer: Timer | None = None
        self._waiting_for_paint = False
        self._next_frame = 0.0
        self._shown_at = 0.0
        self._frame_cost = 0.0

    def compose(self) -> ComposeResult:
        yield from self._chunks

    @property
    def text(self) -> str:
        """Everything written so far, shown yet or not."""
        return "".join(self._parts)

    @property
    def source(self) -> str:
        """What the widgets hold now."""
        return "".join(chunk.source for chunk in self._chunks)

    @property
    def streaming(self) -> bool:
        return self._open or bool(self._pending) or self._batch is not None

    async def write(self, fragment: str) -> None:
        if not fragment:
            return
        self._open = True
        self._parts.append(fragment)
        self._length += len(fragment)
        self._pending.append(fragment)
        if self._waiting_for_paint or self._timer is not None or self._batch is not None:
            return  # a step is already due
        wait = max(self._next_frame - time.monotonic(), input_priority.hold_remaining())
        if wait > 0:
            self._timer = self.set_timer(wait, self._step)
        else:
            self._step()

    def _step(self) -> None:
        """Take the pending text, render a slice of it, or show it: whichever is next."""
        self._timer = None
        if self._waiting_for_paint:
            return
        hold = input_priority.hold_remaining()
        if hold > 0:
            # A key is on its way to the screen: look again in a moment (it is usually drawn soon).
            self._timer = self.set_timer(min(hold, KEY_POLL_S), self._step)
            return
        if self._batch is None:
            if not self._pending:
                return
            self._batch = self._take()
        if self._batch.prepare(SLICE_S):
            self._show()
        else:
            self._timer = self.set_timer(SLICE_GAP_S, self._step)

    def _take(self) -> _Batch:
        pending = "".join(self._pending)
        self._pending.clear()
        blocks, self._tail = split_blocks(self._tail + pending)
        live = self._chunks[-1]
        full = blocks and live.finished_chars >= max(CHUNK_CHARS, CHUNK_SHARE * self._length)
        return _Batch(MarkdownLines(after=live) if full else live, blocks, self._tail)

    def _show(self) -> None:
        batch, self._batch = self._batch, None
        assert batch is not None
        live = self._chunks[-1]
        if batch.target is not live:
            live.extend([], "")  # its open block is in the batch
            self._chunks.append(batch.target)
            self.mount(batch.target)
        batch.target.extend(batch.blocks, batch.tail)
        self._shown_at = time.monotonic()
        self._next_frame = self._shown_at + FLUSH_EVERY_S
        if self.is_mounted:
            self._waiting_for_paint = True
            self.call_after_refresh(self._painted)

    def _painted(self) -> None:
        self._waiting_for_paint = False
        now = time.monotonic()
        self._frame_cost = 0.7 * self._frame_cost + 0.3 * (now - self._shown_at)
        gap = min(MAX_FRAME_GAP_S, max(FLUSH_EVERY_S, FRAME_FACTOR * self._frame_cost))
        self._next_frame = max(self._next_frame, self._shown_at + gap)
        if self._pending and self._timer is None:
            self._timer = self.set_timer(max(0.001, self._next_frame - now), self._step)

    async def finish(self) -> None:
        """Show everything that is pending: the message is complete (or its turn was cancelled)."""
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        while self._pending or self._batch is not None:
            if self._batch is None:
                self._batch = self._take()
            if self._batch.prepare(SLICE_S):
                self._show()
            else:
                await asyncio.sleep(0)  # between slices, keys go first
        self._open = False


def _chunked(blocks: list[str], tail: str) -> list[MarkdownLines]:
    """Finished ``blocks`` and the open ``tail`` in widgets of about ``CHUNK_CHARS`` each (or more,
    as the chunks of a streamed answer grow)."""
    chunks: list[MarkdownLines] = []
    group: list[str] = []
    held = 0
    for block in blocks:
        group.append(block)
        if sum(map(len, group)) >= max(CHUNK_CHARS, CHUNK_SHARE * held):
            chunks.append(MarkdownLines(group, after=chunks[-1] if chunks else None))
            held += sum(map(len, group))
            group = []
    chunks.append(MarkdownLines(group, tail, after=chunks[-1] if chunks else None))
    return chunks
