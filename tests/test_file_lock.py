"""The build and download lock: a holder killed mid-build (SIGKILL, no chance to clean up) leaves
no stale lock behind; the next build takes it at once."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from server.file_lock import exclusive

HOLD = """
import sys, time
from pathlib import Path
from server.file_lock import exclusive
with exclusive(Path(sys.argv[1]), "a build"):
    print("held", flush=True)
    time.sleep(600)
"""


def test_a_holder_killed_mid_build_leaves_no_stale_lock(tmp_path: Path) -> None:
    lock = tmp_path / ".build.lock"
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(lock)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        notices: list[str] = []
        taken = threading.Event()

        def second() -> None:
            with exclusive(lock, "the next build", notices.append):
                taken.set()

        waiting = threading.Thread(target=second, daemon=True)
        waiting.start()
        deadline = time.monotonic() + 30
        while not notices and time.monotonic() < deadline:
            time.sleep(0.05)
        assert notices and f"pid {holder.pid}" in notices[0] and not taken.is_set()
        holder.send_signal(signal.SIGKILL)
        holder.wait(30)
        assert taken.wait(30), "the lock of a killed holder was never released"
        waiting.join(30)
    finally:
        holder.kill()
        holder.wait(30)
