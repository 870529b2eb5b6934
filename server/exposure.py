"""Serving beyond this machine is explicit: a non-loopback address warns and needs an API key.

llama-server answers anyone who can reach its port. On 127.0.0.1 that is this machine; on any
other address it is the network, so the server gets an API key: the user's, or one generated
once and kept 0600 in the state directory. Serving without a key needs `--no-api-key`.
"""

from __future__ import annotations

import ipaddress
import os
import secrets
import socket
from pathlib import Path


def is_loopback(host: str) -> bool:
    if host in ("localhost", "localhost.localdomain"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        try:
            return all(ipaddress.ip_address(info[4][0]).is_loopback for info in socket.getaddrinfo(host, None))
        except (OSError, ValueError):
            return False  # unknown name: treat it as exposed


def load_or_create_api_key(path: Path) -> str:
    """The generated key, made once: 0600 in a 0700 directory, never rewritten."""
    try:
        key = path.read_text().strip()
        if key:
            return key
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    key = "la-" + secrets.token_urlsafe(24)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(key + "\n")
    return key
