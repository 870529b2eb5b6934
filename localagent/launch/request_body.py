"""A request's body as the meter reads it off the socket: by its Content-Length or its chunks,
with a one-line reason (answered 400) when its framing cannot be read."""

from __future__ import annotations

import re
from email.message import Message
from io import BufferedIOBase

_DIGITS = re.compile(rb"[0-9]+")
_HEX_DIGITS = re.compile(rb"[0-9A-Fa-f]+")


class BadRequest(Exception):
    """What makes a request unreadable, in one line: it is answered 400."""


def read_body(headers: Message, stream: BufferedIOBase) -> bytes:
    if headers.get("Transfer-Encoding", "").lower() == "chunked":
        return _read_chunked(stream)
    given = headers.get("Content-Length")
    if given is None:
        return b""
    if not _DIGITS.fullmatch(given.strip().encode(errors="replace")):
        raise BadRequest(f"the request's Content-Length is not a number: {given[:40]!r}")
    length = int(given)
    return stream.read(length) if length > 0 else b""


def _read_chunked(stream: BufferedIOBase) -> bytes:
    body = bytearray()
    while True:
        line = stream.readline()
        size_field = line.split(b";", 1)[0].strip()
        if not _HEX_DIGITS.fullmatch(size_field):
            said = line.decode(errors="replace").strip()[:40]
            raise BadRequest(f"the request's chunked body has a bad chunk size: {said!r}")
        size = int(size_field, 16)
        if size == 0:
            while stream.readline() not in (b"\r\n", b"\n", b""):
                pass  # trailers
            return bytes(body)
        chunk = stream.read(size)
        if len(chunk) < size:
            raise BadRequest("the request's chunked body ended inside a chunk")
        body += chunk
        stream.readline()  # the CRLF after each chunk
