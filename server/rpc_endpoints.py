"""RPC worker addresses (``host:port``) and whether a worker answers there.

llama.cpp's RPC protocol has no authentication and no encryption, and a worker computes whatever a
client sends it: whoever reaches its port can use its memory and devices, and upstream calls the
protocol insecure. So a worker belongs on loopback or a private network, and any other address is
named with a warning wherever it appears (the worker's bind address, a profile's worker list).
"""

from __future__ import annotations

import socket
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor

from server.exposure import is_loopback

DEFAULT_WORKER_PORT = 50052
RPC_WARNING_START = "warning: RPC workers on"  # how a profile's exposed workers are warned about


class EndpointError(ValueError):
    """A worker address that is not ``host:port``."""


def parse_endpoint(text: str) -> tuple[str, int]:
    """``host:port`` into (host, port)."""
    text = text.strip()
    host, sep, port_text = text.rpartition(":")
    if not sep or not host or not port_text.isdigit():
        raise EndpointError(f"RPC worker {text!r} is not host:port (e.g. 192.168.1.20:{DEFAULT_WORKER_PORT})")
    port = int(port_text)
    if not 1 <= port <= 65535:
        raise EndpointError(f"RPC worker {text!r}: port {port} is out of range (1-65535)")
    if host.startswith("[") or ":" in host:
        # llama.cpp splits an endpoint at its first colon, so it cannot reach an IPv6 address.
        raise EndpointError(f"RPC worker {text!r}: llama.cpp's RPC takes an IPv4 address or a host name, not IPv6")
    if not host or any(ch.isspace() or ch in ",/" for ch in host):
        raise EndpointError(f"RPC worker {text!r} has no valid host")
    return host, port


def worker_answers(endpoint: str, timeout: float = 1.0) -> bool:
    return tcp_accepts(*parse_endpoint(endpoint), timeout=timeout)


def tcp_accepts(host: str, port: int, timeout: float = 1.0) -> bool:
    """True when something accepts a TCP connection there. A worker serves one client at a time,
    but the kernel accepts a connection into its backlog while it is busy, so a busy worker
    answers too; closing at once costs the worker nothing (it reads end-of-file and goes on)."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def silent_workers(endpoints: Iterable[str], timeout: float = 0.5) -> list[str]:
    """The workers that do not answer, all asked at once: this runs when a server has just died,
    on the supervisor's event loop, so it takes ``timeout`` at most, however many workers there are."""
    endpoints = list(endpoints)
    if not endpoints:
        return []
    with ThreadPoolExecutor(max_workers=len(endpoints)) as pool:
        answers = list(pool.map(lambda endpoint: worker_answers(endpoint, timeout), endpoints))
    return [endpoint for endpoint, answered in zip(endpoints, answers, strict=True) if not answered]


def exposed_workers(endpoints: Iterable[str]) -> list[str]:
    return [endpoint for endpoint in endpoints if not is_loopback(parse_endpoint(endpoint)[0])]


def exposure_warning(endpoints: list[str], *, binding: bool) -> str | None:
    exposed = exposed_workers(endpoints)
    if not exposed:
        return None
    where = ", ".join(exposed)
    if binding:
        return (
            f"warning: an RPC worker on {where} can be used by anyone who reaches that address: llama.cpp's "
            "RPC has no authentication or encryption; bind to 127.0.0.1 or a private network's address only"
        )
    return (
        f"{RPC_WARNING_START} {where} are reached without authentication or encryption; keep them on "
        "a private network (a firewall allowing only this machine), never an open one"
    )
