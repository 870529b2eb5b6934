"""One process at a time for work that shares a cache: two first-time builds, or two CUDA toolkit
downloads, would otherwise both run and overwrite each other's files. ``flock`` on a lock file
beside the cache: the kernel drops it when the holder dies, so a killed build never leaves a
stale lock behind."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def exclusive(lock_file: Path, what: str, notice: Callable[[str], None] | None = None) -> Iterator[None]:
    """Hold ``lock_file`` for the block; if another process holds it, say so once and wait."""
    lock_file.parent.mkdir(parents=True, exist_ok=True)
    with lock_file.open("a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            if notice is not None:
                notice(f"waiting for {what} in {holder} to finish (lock {lock_file})")
            fcntl.flock(handle, fcntl.LOCK_EX)
        handle.seek(0)
        handle.truncate()
        handle.write(f"pid {os.getpid()}")
        handle.flush()
        try:
            yield
        finally:
            handle.seek(0)
            handle.truncate()
            fcntl.flock(handle, fcntl.LOCK_UN)
