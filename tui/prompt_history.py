"""Prompts typed in earlier sessions, kept per repository: a small JSONL file, one prompt a line.

The CLI passes the file (``history_file_for(<data dir>, <workspace>)``); without one the history
lives in memory only. The file may hold secrets someone pasted, so it is private to its owner.
Writing is best effort: a full disk or a read-only data directory costs the history, never the
session.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

# Entries loaded and kept; the file is rewritten down to this when it grows to twice as much.
MAX_ENTRIES = 1000
# Longer prompts (a pasted log) are not worth recalling and would bloat the file.
MAX_ENTRY_CHARS = 20_000


def history_file_for(data_dir: Path, workspace: Path) -> Path:
    """Where the prompts typed in `workspace` are kept: keyed by a hash of its resolved path."""
    digest = hashlib.sha256(str(Path(workspace).resolve()).encode("utf-8", "surrogateescape")).hexdigest()
    return Path(data_dir) / "prompt-history" / f"{digest[:24]}.jsonl"


class PromptHistory:
    """The prompts, oldest first: ``load`` once, then ``append`` each new one."""

    def __init__(self, path: Path | None = None, max_entries: int = MAX_ENTRIES) -> None:
        self.path = path
        self.max_entries = max_entries
        self._lines_in_file = 0

    def load(self) -> list[str]:
        if self.path is None:
            return []
        try:
            raw = self.path.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            return []
        self._lines_in_file = len(raw)
        entries: list[str] = []
        for line in raw:
            try:
                record = json.loads(line)
            except ValueError:
                continue  # a line cut short by a crash, or someone's edit
            text = record.get("text") if isinstance(record, dict) else None
            if isinstance(text, str) and text.strip():
                entries.append(text)
        return entries[-self.max_entries :]

    def append(self, text: str) -> None:
        if self.path is None or not text.strip() or len(text) > MAX_ENTRY_CHARS:
            return
        line = json.dumps({"text": text, "at": round(time.time(), 3)}, ensure_ascii=False) + "\n"
        try:
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            # One write of one line with O_APPEND: two sessions in the same repository interleave
            # whole lines, never halves.
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, line.encode("utf-8", "surrogatepass"))
            finally:
                os.close(fd)
        except OSError:
            return
        self._lines_in_file += 1
        if self._lines_in_file >= 2 * self.max_entries:
            self._trim()

    def _trim(self) -> None:
        """Keep the newest entries: write them to a new file and rename it over the old one."""
        assert self.path is not None
        entries = self.load()
        temporary = self.path.with_name(self.path.name + f".{os.getpid()}.tmp")
        try:
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                for text in entries:
                    handle.write(json.dumps({"text": text}, ensure_ascii=False) + "\n")
            os.replace(temporary, self.path)
        except OSError:
            temporary.unlink(missing_ok=True)
            return
        self._lines_in_file = len(entries)
