"""Keys before text: while the user types, streamed output waits a moment.

A repaint that includes new Markdown costs tens of milliseconds on a long answer; one that only
echoes a key costs one or two. So for a short while after each keypress the answer holds its new
text back (it is shown right after), and the echo gets the cheap frames.
"""

from __future__ import annotations

import time

HOLD_S = 0.12

_last_keypress = float("-inf")


def note_keypress() -> None:
    global _last_keypress
    _last_keypress = time.monotonic()


def hold_remaining() -> float:
    """Seconds streamed output should still wait for, 0 when it may go ahead."""
    return max(0.0, _last_keypress + HOLD_S - time.monotonic())
