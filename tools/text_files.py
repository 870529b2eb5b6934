"""Read and write text files while keeping their encoding and line endings as they were."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tools.base import ToolError

BINARY_SNIFF_BYTES = 8192
# Above this share of control bytes a non-UTF-8 file is treated as binary rather than latin-1.
MAX_CONTROL_BYTE_RATIO = 0.10
MAX_TEXT_FILE_BYTES = 20 * 1024 * 1024

_TEXT_CONTROL_BYTES = frozenset(b"\t\n\r\f\b\x1b")


def looks_binary(data: bytes) -> bool:
    """NUL bytes in the first 8 KB, or lots of control bytes in a non-UTF-8 file."""
    sample = data[:BINARY_SNIFF_BYTES]
    if b"\x00" in sample:
        return True
    try:
        sample.decode("utf-8")
        return False
    except UnicodeDecodeError as exc:
        # A multi-byte character cut at the sample boundary is still text.
        if exc.start >= len(sample) - 3 and exc.reason == "unexpected end of data":
            return False
    controls = sum(1 for byte in sample if byte < 0x20 and byte not in _TEXT_CONTROL_BYTES)
    controls += sample.count(0x7F)
    return bool(sample) and controls / len(sample) > MAX_CONTROL_BYTE_RATIO


def decode_text(data: bytes) -> tuple[str, str]:
    """Decode as UTF-8, falling back to latin-1 (which accepts any byte). Returns (text, encoding)."""
    try:
        return data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        return data.decode("latin-1"), "latin-1"


@dataclass
class TextFile:
    """A file's text with CRLF folded to LF (when the file uses CRLF throughout).

    Tools work on `text` with plain '\\n' line breaks; `encode` restores the original style.
    """

    path: Path
    text: str
    encoding: str
    newline: str

    @classmethod
    def load(cls, path: Path, shown_as: str) -> TextFile:
        ensure_regular_file(path, shown_as)
        size = path.stat().st_size
        if size > MAX_TEXT_FILE_BYTES:
            raise ToolError(
                f"{shown_as} is {size:,} bytes, too large to handle as text "
                f"(limit {MAX_TEXT_FILE_BYTES:,}); use grep to find the part you need"
            )
        data = path.read_bytes()
        if looks_binary(data):
            raise ToolError(f"{shown_as} is a binary file ({size:,} bytes); only text files can be read or edited")
        raw_text, encoding = decode_text(data)
        crlf_count = raw_text.count("\r\n")
        if crlf_count and crlf_count == raw_text.count("\n"):
            return cls(path, raw_text.replace("\r\n", "\n"), encoding, "\r\n")
        return cls(path, raw_text, encoding, "\n")

    def normalise_input(self, text: str) -> str:
        """Fold CRLF in model-supplied text so it matches the LF-folded file text."""
        return text.replace("\r\n", "\n") if self.newline == "\r\n" else text

    def encode(self, text: str) -> bytes:
        if self.newline == "\r\n":
            text = text.replace("\n", "\r\n")
        try:
            return text.encode(self.encoding)
        except UnicodeEncodeError as exc:
            bad = text[exc.start : exc.end]
            raise ToolError(
                f"the new text contains {bad!r}, which cannot be written in this file's "
                f"{self.encoding} encoding; use characters that encoding supports"
            ) from exc

    def write(self, text: str) -> None:
        data = self.encode(text)
        self.path.write_bytes(data)
        self.text = text


def ensure_regular_file(path: Path, shown_as: str) -> None:
    if not path.exists():
        raise ToolError(f"{shown_as} does not exist; check the path (glob can find files)")
    if path.is_dir():
        raise ToolError(f"{shown_as} is a directory, not a file; give a file path")
    if not path.is_file():
        raise ToolError(f"{shown_as} is not a regular file")


def split_lines(text: str) -> list[str]:
    """Lines without their '\\n'; a final newline does not start an extra empty line."""
    if not text:
        return []
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()
    return lines


def line_number_at(text: str, offset: int) -> int:
    """1-based line number of the character at `offset`."""
    return text.count("\n", 0, offset) + 1
