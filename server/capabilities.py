"""What a llama-server binary can do, read from its own ``--help``.

Flags change between llama.cpp releases and forks (upstream vs BeeLlama), so nothing here is
assumed from a version number: every decision about argv is made against these capabilities.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from server.errors import BinaryError

# A flag line starts at column 0 with one or more comma-separated spellings, then the value hint.
_SPELLINGS = re.compile(r"^(?:--?[A-Za-z0-9][\w-]*(?:,\s*|\s|$))+")
_ALLOWED_VALUES = re.compile(r"allowed values:\s*(.+)")
_REMOVED = "the argument has been removed"


@dataclass(frozen=True)
class FlagInfo:
    spellings: tuple[str, ...]
    value_hint: str
    description: str


@dataclass(frozen=True)
class Capabilities:
    """The parsed ``--help`` of one binary."""

    flags: dict[str, FlagInfo] = field(default_factory=dict)
    spec_types: tuple[str, ...] = ()
    cache_types: tuple[str, ...] = ()
    removed_flags: frozenset[str] = frozenset()
    version: str = "unknown"

    def has(self, flag: str) -> bool:
        return flag in self.flags and flag not in self.removed_flags

    def supports_spec_type(self, spec_type: str) -> bool:
        return spec_type in self.spec_types

    @property
    def dflash_spec_type(self) -> str | None:
        """The ``--spec-type`` value that selects DFlash on this binary, if any."""
        if "draft-dflash" in self.spec_types:
            return "draft-dflash"
        if "dflash" in self.spec_types:
            return "dflash"
        return None

    @property
    def flavour(self) -> str:
        if self.has("--spec-dflash-cross-ctx"):
            return "beellama (legacy dflash)"
        if self.has("--spec-dm-controller"):
            return "beellama"
        return "llama.cpp"

    def summary(self) -> dict[str, object]:
        return {
            "version": self.version,
            "flavour": self.flavour,
            "dflash": self.dflash_spec_type or "not supported",
            "spec_types": list(self.spec_types),
            "cache_types": list(self.cache_types),
            "load_mode": "--load-mode" if self.has("--load-mode") else "--mlock/--no-mmap",
            "flags": {
                name: self.has(name)
                for name in (
                    "--spec-dflash-cross-ctx",
                    "--spec-draft-n-max",
                    "--spec-draft-p-min",
                    "--kv-unified",
                    "--no-host",
                    "--mlock",
                    "--no-mmap",
                    "--load-mode",
                    "--cache-ram",
                    "--reasoning",
                    "--metrics",
                )
            },
        }


def parse_help(text: str, version: str = "unknown") -> Capabilities:
    flags: dict[str, FlagInfo] = {}
    removed: set[str] = set()
    spec_types: tuple[str, ...] = ()
    cache_types: tuple[str, ...] = ()

    current: list[str] | None = None
    current_hint = ""
    description_lines: list[str] = []

    def finish() -> None:
        nonlocal spec_types, cache_types
        if current is None:
            return
        description = " ".join(line.strip() for line in description_lines).strip()
        info = FlagInfo(tuple(current), current_hint, description)
        for spelling in current:
            flags[spelling] = info
        if _REMOVED in description:
            removed.update(current)
        if "--spec-type" in current:
            spec_types = _parse_choice_list(current_hint)
        if "--cache-type-k" in current:
            match = _ALLOWED_VALUES.search(description)
            if match:
                cache_types = tuple(value.strip() for value in match.group(1).split("(")[0].split(",") if value.strip())

    for line in text.splitlines():
        if line.startswith("-") and not line.startswith("-----"):
            finish()
            spellings, hint, description = _split_flag_line(line)
            current = spellings
            current_hint = hint
            description_lines = [description]
        elif current is not None:
            description_lines.append(line)
    finish()
    return Capabilities(
        flags=flags,
        spec_types=spec_types,
        cache_types=cache_types,
        removed_flags=frozenset(removed),
        version=version,
    )


def _split_flag_line(line: str) -> tuple[list[str], str, str]:
    """Split ``-ctk,  --cache-type-k TYPE   KV cache...`` into spellings, value hint, description."""
    match = _SPELLINGS.match(line)
    head = match.group(0) if match else ""
    spellings = re.findall(r"--?[A-Za-z0-9][\w-]*", head)
    rest = line[len(head) :]
    hint, _, description = rest.strip().partition("  ")
    if rest.startswith("  "):
        # No value hint: the description starts right after the spellings.
        hint, description = "", rest
    return spellings, hint.strip(), description


def _parse_choice_list(hint: str) -> tuple[str, ...]:
    cleaned = hint.strip().strip("[]{}<>")
    return tuple(value for value in re.split(r"[,|]", cleaned) if value)


def read_capabilities(binary: Path, timeout: float = 30.0) -> Capabilities:
    """Run ``binary --help`` and ``--version`` and parse what it says."""
    try:
        help_run = subprocess.run([str(binary), "--help"], capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise BinaryError(f"cannot run {binary} --help: {exc}") from exc
    text = help_run.stdout or help_run.stderr
    if help_run.returncode < 0:
        from server.exit_reasons import explain_exit

        reason = explain_exit(help_run.returncode, while_loading=False)
        raise BinaryError(f"{binary} --help: {reason.headline}")
    if "--port" not in text:
        raise BinaryError(
            f"{binary} does not look like llama-server (its --help lists no --port); "
            "point server.binary at a llama-server build"
        )
    return parse_help(text, version=read_version(binary, timeout))


def read_version(binary: Path, timeout: float = 30.0) -> str:
    try:
        run = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    for line in (run.stdout + run.stderr).splitlines():
        if line.startswith("version:"):
            return line.split(":", 1)[1].strip()
    return "unknown"
