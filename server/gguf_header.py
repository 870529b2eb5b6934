"""A GGUF file's header (metadata and tensor list) read from any byte stream.

The memory plan needs a model's shape and the size of its weights before anything is loaded, and
ideally before a 17 GB file is downloaded: the header is the first few megabytes, so it is read
here from a stream (a local file, or an HTTP range response) and reading stops where the tensor
data begins. ``gguf.GGUFReader`` maps the whole file instead, which needs all of it on disk. The
format's constants (value types, tensor type block sizes) come from the ``gguf`` package.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from math import prod
from typing import Any, BinaryIO

from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType, GGUFValueType

# Arrays longer than this (the tokenizer's 262,144 tokens) are skipped, their length kept.
_KEPT_ARRAY = 4096
_SCALARS: dict[int, str] = {
    GGUFValueType.UINT8: "<B",
    GGUFValueType.INT8: "<b",
    GGUFValueType.UINT16: "<H",
    GGUFValueType.INT16: "<h",
    GGUFValueType.UINT32: "<I",
    GGUFValueType.INT32: "<i",
    GGUFValueType.FLOAT32: "<f",
    GGUFValueType.BOOL: "<?",
    GGUFValueType.UINT64: "<Q",
    GGUFValueType.INT64: "<q",
    GGUFValueType.FLOAT64: "<d",
}


class GGUFHeaderError(ValueError):
    """The stream is not a GGUF file this reader understands."""


@dataclass(frozen=True)
class TensorInfo:
    name: str
    shape: tuple[int, ...]
    type: int

    @property
    def nbytes(self) -> int:
        block, size = GGML_QUANT_SIZES[GGMLQuantizationType(self.type)]
        return prod(self.shape) // block * size


@dataclass
class GGUFHeader:
    version: int
    metadata: dict[str, Any] = field(default_factory=dict)
    # Lengths of arrays too long to keep (tokenizer.ggml.tokens: the vocabulary size).
    array_lengths: dict[str, int] = field(default_factory=dict)
    tensors: list[TensorInfo] = field(default_factory=list)

    @property
    def architecture(self) -> str:
        return str(self.metadata.get("general.architecture", ""))

    def arch_value(self, key: str, default: Any = None) -> Any:
        return self.metadata.get(f"{self.architecture}.{key}", default)

    @property
    def weights_bytes(self) -> int:
        return sum(t.nbytes for t in self.tensors)


class _Stream:
    def __init__(self, read: Callable[[int], bytes]) -> None:
        self._read = read

    def take(self, n: int) -> bytes:
        data = self._read(n)
        if len(data) != n:
            raise GGUFHeaderError("the file ends inside its header")
        return data

    def unpack(self, fmt: str) -> Any:
        return struct.unpack(fmt, self.take(struct.calcsize(fmt)))[0]

    def string(self) -> str:
        length = self.unpack("<Q")
        if length > 1 << 24:
            raise GGUFHeaderError(f"a string of {length} bytes in the header: not a GGUF file")
        return self.take(length).decode("utf-8", errors="replace")

    def value(self, kind: int) -> Any:
        if kind == GGUFValueType.STRING:
            return self.string()
        if kind in _SCALARS:
            return self.unpack(_SCALARS[kind])
        raise GGUFHeaderError(f"unknown value type {kind}")


def read_header(source: BinaryIO | Callable[[int], bytes]) -> GGUFHeader:
    """The header of the GGUF at the start of ``source`` (a binary file, or a read(n) function)."""
    stream = _Stream(source.read if hasattr(source, "read") else source)
    if stream.take(4) != b"GGUF":
        raise GGUFHeaderError("not a GGUF file (no GGUF magic)")
    version = stream.unpack("<I")
    if version < 2:
        raise GGUFHeaderError(f"GGUF version {version} is too old; convert the model again")
    header = GGUFHeader(version)
    n_tensors, n_kv = stream.unpack("<Q"), stream.unpack("<Q")
    for _ in range(n_kv):
        key = stream.string()
        kind = stream.unpack("<I")
        if kind != GGUFValueType.ARRAY:
            header.metadata[key] = stream.value(kind)
            continue
        item_kind, count = stream.unpack("<I"), stream.unpack("<Q")
        items = [stream.value(item_kind) for _ in range(count)]
        if count <= _KEPT_ARRAY:
            header.metadata[key] = items
        header.array_lengths[key] = count
    for _ in range(n_tensors):
        name = stream.string()
        dims = tuple(stream.unpack("<Q") for _ in range(stream.unpack("<I")))
        kind = stream.unpack("<I")
        stream.unpack("<Q")  # the offset of its data
        header.tensors.append(TensorInfo(name, dims, kind))
    return header
