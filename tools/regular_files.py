"""Reading a file that a stranger can swap under us: never through a symlink, never blocking.

A workspace's file can be replaced between the check and the read by a symlink out of it or by a
FIFO that would block forever. So the file is opened with O_NOFOLLOW (a symlink as the last part
is refused) and O_NONBLOCK (opening a FIFO never waits), and checked as a regular file once open.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path

_CHUNK = 65536


class NotRegularFile(OSError):
    """What was opened is a FIFO, a device, a directory or a socket."""


@dataclass(frozen=True)
class RegularFile:
    data: bytes
    # Bytes past the limit, left unread (0 without a limit).
    unread: int
    # The permission and type bits of the file as opened.
    mode: int


def read_regular_file(path: Path, limit: int | None = None) -> RegularFile:
    """At most `limit` bytes of the regular file at `path`; raises OSError (NotRegularFile for
    anything else, ELOOP for a symlink)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise NotRegularFile(errno.EINVAL, "not a regular file", str(path))
        chunks: list[bytes] = []
        size = 0
        while limit is None or size < limit:
            chunk = os.read(fd, _CHUNK if limit is None else min(_CHUNK, limit - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    finally:
        os.close(fd)
    unread = max(info.st_size - size, 0) if limit is not None and size >= limit else 0
    return RegularFile(b"".join(chunks), unread, info.st_mode)
