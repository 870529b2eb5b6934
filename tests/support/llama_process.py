"""A llama-server started by a test on a free port, with its output in a log file, waited for
until /health answers and stopped afterwards."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx2

from server.ports import free_port


@contextmanager
def running_llama_server(binary: Path, model: Path, flags: list[str], log: Path) -> Iterator[str]:
    """The server's root URL, once it answers /health (a server that exits fails with its log)."""
    port = free_port()
    argv = [str(binary), "-m", str(model), "--host", "127.0.0.1", "--port", str(port), *flags]
    with log.open("w") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            assert proc.poll() is None, log.read_text()[-3000:]
            try:
                if httpx2.get(f"{url}/health", timeout=2).status_code == 200:
                    break
            except httpx2.HTTPError:
                pass
            time.sleep(0.3)
        yield url
    finally:
        proc.terminate()
        proc.wait(30)
