#!/usr/bin/env python3
"""A stand-in llama-server binary for failure tests: it answers --help like the real one (from the
recorded help text) and then does what FAKE_LLAMA_MODE says:

- ``signal:NAME``: kill itself with that signal at once (as a binary built for another CPU does),
- ``serve``: serve /health, /props and /completion (with DFlash-looking timings) until SIGTERM,
- ``serve-then:NAME``: serve, then kill itself with that signal after FAKE_LLAMA_AFTER seconds.
"""

import json
import os
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

HELP = Path(__file__).resolve().parents[2] / "server" / "known_help" / "llama-server-b11434.txt"


def _arg(name: str, default: str) -> str:
    argv = sys.argv[1:]
    return argv[argv.index(name) + 1] if name in argv else default


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):  # quiet
        pass

    def _json(self, payload):
        data = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path == "/health":
            self._json({"status": "ok"})
        elif self.path == "/props":
            self._json({"model_path": _arg("-m", ""), "default_generation_settings": {"n_ctx": 1024}})
        else:
            self.send_error(404)

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        timings = {"predicted_n": 16, "predicted_per_second": 100.0, "prompt_n": 4}
        if "--spec-type" in sys.argv:
            timings.update(draft_n=15, draft_n_accepted=15)
        self._json({"content": "x" * 16, "tokens_predicted": 16, "timings": timings})


def main() -> None:
    if "--help" in sys.argv:
        print(HELP.read_text())
        return
    if "--list-devices" in sys.argv:
        print("Available devices:\n  (none)")
        return
    if "--version" in sys.argv:
        print("version: 11434 (fake)")
        return
    mode = os.environ.get("FAKE_LLAMA_MODE", "serve")
    print(f"fake llama-server: mode {mode}", flush=True)
    if mode.startswith("signal:"):
        os.kill(os.getpid(), getattr(signal, "SIG" + mode.split(":", 1)[1]))
        time.sleep(5)
        return
    server = ThreadingHTTPServer((_arg("--host", "127.0.0.1"), int(_arg("--port", "8080"))), Handler)
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=server.shutdown).start())
    if mode.startswith("serve-then:"):
        name = mode.split(":", 1)[1]
        after = float(os.environ.get("FAKE_LLAMA_AFTER", "1.0"))
        threading.Timer(after, lambda: os.kill(os.getpid(), getattr(signal, "SIG" + name))).start()
    server.serve_forever()


if __name__ == "__main__":
    main()
