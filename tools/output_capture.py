"""Collect a command's output: its head and tail in memory, all of it in a spool file."""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import BinaryIO

# Memory stays bounded even for commands that print gigabytes.
HEAD_BYTES = 512 * 1024
TAIL_BYTES = 512 * 1024
# Beyond this the spool file stops growing, so a runaway command cannot fill the disk.
MAX_SPOOL_BYTES = 256 * 1024 * 1024


class OutputCapture:
    def __init__(self, scratch_dir: Path, label: str) -> None:
        self.head = bytearray()
        self.tail = bytearray()
        self.total_bytes = 0
        self.total_newlines = 0
        self.spool_path: Path | None = None
        self.spool_overflowed = False
        self._spool: BinaryIO | None = None
        try:
            scratch_dir.mkdir(parents=True, exist_ok=True)
            stamp = time.strftime("%Y%m%d-%H%M%S")
            path = scratch_dir / f"{label}-{stamp}-{uuid.uuid4().hex[:8]}.log"
            self._spool = path.open("wb")
            self.spool_path = path
        except OSError:
            # Output is still shown; only the "full output saved to" file is lost.
            self._spool = None

    def add(self, chunk: bytes) -> None:
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

    def _write_spool(self, chunk: bytes) -> None:
        if self._spool is None:
            return
        room = MAX_SPOOL_BYTES - self._spool.tell()
        if len(chunk) > room:
            chunk = chunk[: max(room, 0)]
            self.spool_overflowed = True
        try:
            self._spool.write(chunk)
        except OSError:
            self._spool.close()
            self._spool = None
            self.spool_overflowed = True
