"""Full garbage collections wait while a turn streams, and until the user pauses after it.

A full (generation 2) collection walks every object the collector tracks. In a session that has
drawn a long answer that takes 50-150 ms, and while an answer streams one comes every second or
so: each freezes the screen, and a key typed then waits for it. So:

- the objects alive once the app has started (modules, classes, the screens) are frozen, once per
  process: no collection walks them again;
- while a turn runs only the young generations are collected (well under a millisecond each);
  after it, the full collection runs once nothing has been typed for a moment (``catch_up``,
  called by the chat screen on a timer), and the usual thresholds come back with it.

Objects freed by reference counting (nearly all) go at once either way; only garbage held in
reference cycles waits.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

# A generation-2 threshold no turn reaches: full collections only when they are let run again.
_NEVER = 1 << 30

_frozen = False
_turns = 0
_saved_threshold: tuple[int, int, int] | None = None


def freeze_startup() -> None:
    """Move everything alive now out of the collector's sight (once per process)."""
    global _frozen
    if _frozen:
        return
    _frozen = True
    gc.collect()
    gc.freeze()


@contextmanager
def full_collections_deferred() -> Iterator[None]:
    """No full collection inside the block, nor after it until ``catch_up`` (or ``restore``)."""
    global _turns, _saved_threshold
    if _saved_threshold is None:
        _saved_threshold = gc.get_threshold()
        young, middle, _ = _saved_threshold
        gc.set_threshold(young, middle, _NEVER)
    _turns += 1
    try:
        yield
    finally:
        _turns -= 1


def deferring() -> bool:
    return _saved_threshold is not None


def catch_up() -> bool:
    """Run the full collection put off by the turns (none is running now); False if one is."""
    if _turns:
        return False
    if restore():
        gc.collect()
    return True


def restore() -> bool:
    """The usual thresholds again (the app is leaving, say); True if they had been changed."""
    global _saved_threshold
    saved, _saved_threshold = _saved_threshold, None
    if saved is None:
        return False
    gc.set_threshold(*saved)
    return True
