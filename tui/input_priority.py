"""Keys before text: while a key is on its way to the screen, streamed output waits.

A key travels through a few message queues (app, screen, prompt) before the repaint that shows
it, and every loop turn in between may run other work first. Drawing new Markdown costs tens of
milliseconds, echoing a key one or two, so from the moment the app receives a key
(``key_arrived``) until the prompt has handled it and the screen has been repainted
(``key_shown``) the answer holds its new text back, and the metrics panel its repaint; both go
ahead right after. A key that never reaches the prompt (a binding, another focused widget) stops
holding anything back after ``MAX_HOLD_S``.
"""

from __future__ import annotations

import time

MAX_HOLD_S = 0.1

_in_flight = 0
_last_arrival = float("-inf")


def key_arrived() -> None:
    global _in_flight, _last_arrival
    _in_flight += 1
    _last_arrival = time.monotonic()


def key_shown() -> None:
    global _in_flight
    _in_flight = max(0, _in_flight - 1)


def since_last_key() -> float:
    """Seconds since the app last received a key."""
    return time.monotonic() - _last_arrival


def hold_remaining() -> float:
    """Seconds streamed output should still wait for, 0 when it may go ahead."""
    global _in_flight
    if not _in_flight:
        return 0.0
    remaining = _last_arrival + MAX_HOLD_S - time.monotonic()
    if remaining <= 0:
        _in_flight = 0  # those keys went elsewhere
        return 0.0
    return remaining
