"""Where a server listens and how to reach it: free ports, and the URL for a bound address."""

from __future__ import annotations

import socket

_WILDCARD_HOSTS = ("0.0.0.0", "::", "")


def local_base_url(host: str, port: int) -> str:
    """The URL to reach a server listening on ``host:port`` from this machine: a server bound to
    every interface (0.0.0.0, ::) is reached at 127.0.0.1."""
    connect = "127.0.0.1" if host in _WILDCARD_HOSTS else host
    return f"http://{connect}:{port}"


def port_is_free(host: str, port: int) -> bool:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def free_port(host: str = "127.0.0.1") -> int:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])
