"""Which RPC workers a running llama-server is still connected to, as the kernel sees it.

When a worker dies, llama.cpp aborts with a bare "Remote RPC server crashed", naming no worker, and
by the time the abort is done the supervisor may already have restarted that worker. The kernel
knows sooner: the server's connection to a dead worker leaves ESTABLISHED the moment the worker's
end closes (CLOSE_WAIT after its FIN, gone after a reset), while connections to live workers stay.
Reading the server's own sockets (``/proc/PID/fd``) in ``/proc/net/tcp`` costs the workers nothing,
where connecting to them would queue behind the server's session (a worker serves one client).
"""

from __future__ import annotations

import ipaddress
import os
import socket
from collections.abc import Iterable
from pathlib import Path

from server.rpc_endpoints import parse_endpoint

_ESTABLISHED = "01"


def socket_inodes(pid: int) -> set[str]:
    inodes: set[str] = set()
    try:
        for fd in os.scandir(f"/proc/{pid}/fd"):
            try:
                target = os.readlink(fd.path)
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    except OSError:
        pass
    return inodes


def _address(hex_text: str) -> tuple[str, int]:
    """``0100007F:C35A`` (as /proc/net/tcp writes it: host byte order) into ("127.0.0.1", 50010)."""
    host_hex, port_hex = hex_text.split(":")
    raw = bytes.fromhex(host_hex)
    # Each 32-bit word is in host (little-endian here) order.
    host_bytes = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
    address = ipaddress.ip_address(host_bytes)
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return str(address), int(port_hex, 16)


Resolved = dict[tuple[str, int], str]  # (address, port) -> the endpoint as the profile wrote it


def resolve_workers(endpoints: Iterable[str]) -> Resolved:
    """Each worker's addresses; a name that does not resolve (now) is left out, not an error."""
    wanted: Resolved = {}
    for endpoint in endpoints:
        try:
            host, port = parse_endpoint(endpoint)
            addresses = {info[4][0] for info in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)}
        except (OSError, ValueError):
            continue
        for address in addresses:
            try:
                wanted[(str(ipaddress.ip_address(str(address).split("%")[0])), port)] = endpoint
            except ValueError:
                continue
    return wanted


def connected_workers(
    pid: int, endpoints: Iterable[str], proc: Path = Path("/proc"), resolved: Resolved | None = None
) -> set[str]:
    """The workers among ``endpoints`` that process ``pid`` holds an ESTABLISHED connection to."""
    wanted = resolved if resolved is not None else resolve_workers(endpoints)
    if not wanted:
        return set()
    inodes = socket_inodes(pid)
    found: set[str] = set()
    for table in ("tcp", "tcp6"):
        try:
            lines = (proc / "net" / table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) < 10 or fields[9] not in inodes or fields[3] != _ESTABLISHED:
                continue
            try:
                remote = _address(fields[2])
            except ValueError:
                continue
            if remote in wanted:
                found.add(wanted[remote])
    return found
