"""The host-memory prompt cache's size, chosen from the memory this machine has free.

With one slot, a session that another session's turn displaced comes back from llama-server's
host-memory prompt cache (``--cache-ram``) instead of being read again. Replayed turn by turn on
one server (``bench --interleave``), three sessions on the tiny profile read 116,509 tokens again
(289 s of prefill on 2 cores) with ``--cache-ram 0`` and none with the cache on. A profile that
says ``cache_ram = "auto"`` gets a quarter of the memory free at launch, at most enough for three
full 32k-token sessions of Gemma 4 31B (3.7 GiB each, ``server plan``).
"""

from __future__ import annotations

from pathlib import Path

AUTO_CAP_MIB = 12 * 1024
AUTO_FLOOR_MIB = 512


def available_mib(meminfo: Path = Path("/proc/meminfo")) -> int | None:
    """MemAvailable, in MiB; None where the system does not say."""
    try:
        for line in meminfo.read_text(encoding="ascii").splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) // 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def auto_cache_mib(available: int | None) -> int:
    """A quarter of what is free, in whole 256 MiB steps, between the floor and the cap."""
    if available is None:
        return AUTO_FLOOR_MIB
    quarter = available // 4 // 256 * 256
    return max(AUTO_FLOOR_MIB, min(AUTO_CAP_MIB, quarter))
