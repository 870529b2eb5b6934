"""Collect a command's output: its head and tail in memory, all of it in a spool file once it
is too long to keep whole.

The spool file is private (0600 in a 0700 folder: a command's output can hold secrets), made only
when output is about to be cut (so short commands and crashed runs leave no empty files), and
capped per command and per session, so a runaway command cannot fill the disk.
"""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path
from typing import BinaryIO

# Memory stays bounded even for commands that print gigabytes.
HEAD_BYTES = 512 * 1024
TAIL_BYTES = 512 * 1024
MAX_SPOOL_BYTES = 256 * 1024 * 1024
MAX_SESSION_SPOOL_BYTES = 1024 * 1024 * 1024
# Below both of these nothing is ever cut from what the model sees (see output_truncation), so no
# file is needed; the spool starts once output may be cut, with everything kept so far.
SPOOL_AFTER_BYTES = 24 * 1024
SPOOL_AFTER_LINES = 300


def _private_dir(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(path, 0o700)


def _used_bytes(directory: Path) -> int:
    try:
        return sum(entry.stat().st_size for entry in directory.iterdir() if entry.is_file())
    except OSError:
        return 0


class OutputCapture:
    def __init__(self, scratch_dir: Path, label: str) -> None:
        self.head = bytearray()
        self.tail = bytearray()
        self.total_bytes = 0
        self.total_newlines = 0
        self.spool_path: Path | None = None
        self.spool_overflowed = False
        self._spool: BinaryIO | None = None
        self._scratch_dir = scratch_dir
        self._label = label
        self._room = 0  # bytes the spool may still take
        self._spool_failed = False

    def add(self, chunk: bytes) -> None:
        if (
            self._spool is None
            and not self._spool_failed
            and (
                self.total_bytes + len(chunk) > SPOOL_AFTER_BYTES
                or self.total_newlines + chunk.count(b"\n") > SPOOL_AFTER_LINES
            )
        ):
            # Everything so far is still in memory (nothing was dropped yet): start the file with it.
            self._open_spool(bytes(self.head) + bytes(self.tail))
        self.total_bytes += len(chunk)
        self.total_newlines += chunk.count(b"\n")
        self._write_spool(chunk)
        room = HEAD_BYTES - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            if len(self.tail) > TAIL_BYTES:
                del self.tail[: len(self.tail) - TAIL_BYTES]

    @property
    def dropped_bytes(self) -> int:
        """Bytes between head and tail that are no longer in memory."""
        return self.total_bytes - len(self.head) - len(self.tail)

    def close(self, keep_spool: bool) -> Path | None:
        """Close the spool file; keep it (and return its path) only when asked."""
        if self._spool is not None:
            self._spool.close()
            self._spool = None
        if self.spool_path is None:
            return None
        if keep_spool:
            return self.spool_path
        self.spool_path.unlink(missing_ok=True)
        self.spool_path = None
        return None

    def _open_spool(self, first: bytes) -> None:
        try:
            _private_dir(self._scratch_dir.parent)
            _private_dir(self._scratch_dir)
            self._room = min(MAX_SPOOL_BYTES, MAX_SESSION_SPOOL_BYTES - _used_bytes(self._scratch_dir))
            if self._room <= 0:
                self._spool_failed = self.spool_overflowed = True
                return
            stamp = time.strftime("%Y%m%d-%H%M%S")
            path = self._scratch_dir / f"{self._label}-{stamp}-{uuid.uuid4().hex[:8]}.log"
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            self._spool = os.fdopen(fd, "wb")
            self.spool_path = path
        except OSError:
            # Output is still shown; only the "full output saved to" file is lost.
            self._spool_failed = True
            return
        self._write_spool(first)

    def _write_spool(self, chunk: bytes) -> None:
        if self._spool is None:
            return
        if len(chunk) > self._room:
            chunk = chunk[: max(self._room, 0)]
            self.spool_overflowed = True
        try:
            self._spool.write(chunk)
            self._room -= len(chunk)
        except OSError:
            self._spool.close()
            self._spool = None
            self.spool_overflowed = True
