"""Read and write text files while keeping their encoding and line endings as they were."""

from __future__ import annotations

import errno
import re
from dataclasses import dataclass
from pathlib import Path

from tools.base import ToolError
from tools.regular_files import NotRegularFile, read_regular_file

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


def decode_text(data: bytes) -> DecodedText:
    """UTF-8, with any stray bytes kept as markers; latin-1 (which takes any byte) for files that are not UTF-8."""
    try:
        return DecodedText(data.decode("utf-8"), "utf-8")
    except UnicodeDecodeError:
        pass
    escaped = data.decode("utf-8", errors="surrogateescape")
    marked, stray = _ESCAPED_BYTE.subn(_marker_for, escaped)
    non_ascii = len(escaped) - len(escaped.encode("ascii", errors="ignore"))
    # More valid multi-byte characters than bad bytes: UTF-8 with a few stray bytes. A latin-1
    # file's accented letters are almost never valid UTF-8 sequences, so it fails this test.
    # Text already holding marker-like sequences stays latin-1 too: writing it back would
    # turn them into bytes, while latin-1 returns every byte exactly as it was.
    if non_ascii - stray >= stray and not BYTE_MARKER.search(escaped):
        return DecodedText(marked, "utf-8", stray)
    return DecodedText(data.decode("latin-1"), "latin-1")


def mark_stray_bytes(data: bytes) -> str:
    """UTF-8 text with each undecodable byte shown as its marker, e.g. ⟦FF⟧."""
    return _ESCAPED_BYTE.sub(_marker_for, data.decode("utf-8", errors="surrogateescape"))


def encode_text(text: str, encoding: str, stray_bytes: int) -> bytes:
    """The inverse of decode_text: in a UTF-8 file with stray bytes, markers become those bytes again."""
    if encoding == "utf-8" and stray_bytes:
        return BYTE_MARKER.sub(_escaped_byte_for, text).encode("utf-8", errors="surrogateescape")
    return text.encode(encoding)


def describe_stray_bytes(count: int) -> str:
    noun = "byte is" if count == 1 else "bytes are"
    return (
        f"[{count} {noun} not valid UTF-8; each is shown as a marker like ⟦FF⟧ (its hex value) "
        "and written back as that byte: copy markers unchanged into old_string]"
    )


@dataclass(frozen=True)
class DecodedText:
    text: str
    encoding: str
    # Bytes that are not valid UTF-8, shown in `text` as markers.
    stray_bytes: int = 0


# A byte the model can see and type; U+27E6/U+27E7 brackets almost never occur in real text.
BYTE_MARKER = re.compile("⟦([89A-Fa-f][0-9A-Fa-f])⟧")
# surrogateescape decodes an undecodable byte 0xXY as the lone surrogate U+DCXY.
_ESCAPED_BYTE = re.compile("[\udc80-\udcff]")


def _marker_for(match: re.Match[str]) -> str:
    return f"⟦{ord(match.group()) - 0xDC00:02X}⟧"


def _escaped_byte_for(match: re.Match[str]) -> str:
    return chr(0xDC00 + int(match.group(1), 16))


@dataclass
class TextFile:
    """A file's text with CRLF folded to LF (when the file uses CRLF throughout).

    Tools work on `text` with plain '\\n' line breaks; `encode` restores the original style
    and bytes, including bytes that are not valid UTF-8 (shown in `text` as markers).
    """

    path: Path
    text: str
    encoding: str
    newline: str
    stray_bytes: int = 0

    @classmethod
    def load(cls, path: Path, shown_as: str) -> TextFile:
        ensure_regular_file(path, shown_as)
        size = path.stat().st_size
        if size > MAX_TEXT_FILE_BYTES:
            raise ToolError(
                f"{shown_as} is {size:,} bytes, too large to handle as text "
                f"(limit {MAX_TEXT_FILE_BYTES:,}); use grep to find the part you need"
            )
        # The path is resolved, so a symlink or a FIFO found here was swapped in since the check.
        try:
            data = read_regular_file(path, MAX_TEXT_FILE_BYTES + 1).data
        except NotRegularFile:
            raise ToolError(f"{shown_as} is not a regular file") from None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise ToolError(f"{shown_as} was replaced by a symlink while being read; read it again") from None
            raise
        if len(data) > MAX_TEXT_FILE_BYTES:
            raise ToolError(f"{shown_as} grew past {MAX_TEXT_FILE_BYTES:,} bytes while being read; use grep instead")
        if looks_binary(data):
            raise ToolError(f"{shown_as} is a binary file ({size:,} bytes); only text files can be read or edited")
        decoded = decode_text(data)
        raw_text = decoded.text
        crlf_count = raw_text.count("\r\n")
        newline = "\r\n" if crlf_count and crlf_count == raw_text.count("\n") else "\n"
        text = raw_text.replace("\r\n", "\n") if newline == "\r\n" else raw_text
        return cls(path, text, decoded.encoding, newline, decoded.stray_bytes)

    def normalise_input(self, text: str) -> str:
        """Fold CRLF in model-supplied text so it matches the LF-folded file text."""
        return text.replace("\r\n", "\n") if self.newline == "\r\n" else text

    def encode(self, text: str) -> bytes:
        if self.newline == "\r\n":
            text = text.replace("\n", "\r\n")
        try:
            return encode_text(text, self.encoding, self.stray_bytes)
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
