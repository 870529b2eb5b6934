"""Small fakes of vLLM and SGLang for tests: their endpoints as each engine answers them, and a
/metrics page that is the recorded page of that engine (tests/fixtures/engine_metrics) with its
counters advanced by every answer. Answers stream like those engines do: no llama.cpp `timings`.

Run as a program it is the stand-in for the engine's own launcher:
``python -m tests.support.fake_engines vllm serve MODEL --host H --port P ...`` serves until
SIGTERM and writes its argv to $FAKE_ENGINE_ARGV (when set), so a test can check the exact
command localagent ran.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Self

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "engine_metrics"
PAGES = {"vllm": FIXTURES / "vllm-0.33.0.txt", "sglang": FIXTURES / "sglang-0.5.23.txt"}
ANSWER = "def add(a, b):\n    return a + b\n"
# Per generated token, what the engine's counters advance by: two drafted, one accepted.
DRAFTED_PER_TOKEN, ACCEPTED_PER_TOKEN = 2, 1


class FakeEngine:
    def __init__(self, engine: str, model: str = "google/gemma-4-31B-it", port: int = 0) -> None:
        self.engine, self.model = engine, model
        self.page = PAGES[engine].read_text()
        self.generated = 0
        self.requests: list[dict] = []
        self._lock = threading.Lock()
        handler = type("Handler", (_Handler,), {"owner": self})
        self.httpd = ThreadingHTTPServer(("127.0.0.1", port), handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_port}"

    def __enter__(self) -> Self:
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def metrics(self) -> str:
        with self._lock:
            tokens = self.generated
        advance = {
            "vllm:generation_tokens_total": tokens,
            "vllm:spec_decode_num_draft_tokens_total": tokens * DRAFTED_PER_TOKEN,
            "vllm:spec_decode_num_accepted_tokens_total": tokens * ACCEPTED_PER_TOKEN,
            "vllm:spec_decode_num_drafts_total": tokens,
            "sglang:generation_tokens_total": tokens,
        }

        def bump(match: re.Match[str]) -> str:
            return f"{match.group(1)}{match.group(2)} {float(match.group(3)) + advance[match.group(1)]}"

        names = "|".join(re.escape(name) for name in advance)
        return re.sub(rf"^({names})(\{{[^}}]*\}}) (\S+)$", bump, self.page, flags=re.MULTILINE)

    def answered(self, tokens: int) -> None:
        with self._lock:
            self.generated += tokens


class _Handler(BaseHTTPRequestHandler):
    owner: FakeEngine

    def do_GET(self) -> None:
        owner = self.owner
        if self.path == "/health":
            self._send(200, b"", "text/plain")  # both engines: 200 and no body
        elif self.path == "/metrics":
            self._send(200, owner.metrics().encode(), "text/plain; version=0.0.4")
        elif self.path == "/v1/models":
            data = [{"id": owner.model, "object": "model", "owned_by": owner.engine}]
            self._json({"object": "list", "data": data})
        elif self.path == "/version" and owner.engine == "vllm":
            self._json({"version": "0.33.0"})
        elif self.path in ("/server_info", "/get_server_info") and owner.engine == "sglang":
            self._json({"version": "0.5.23", "model_path": owner.model})
        else:
            self._json({"detail": "Not Found"}, 404)

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        self.owner.requests.append(body)
        if self.path != "/v1/chat/completions":
            self._json({"detail": "Not Found"}, 404)
            return
        words = re.findall(r"\S+\s*", ANSWER)[: int(body.get("max_tokens") or 16)]
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": self.owner.model}
        for i, word in enumerate(words):
            finish = "stop" if i == len(words) - 1 else None
            self._event({**base, "choices": [{"index": 0, "delta": {"content": word}, "finish_reason": finish}]})
        self.owner.answered(len(words))
        if (body.get("stream_options") or {}).get("include_usage"):
            usage = {"prompt_tokens": 12, "completion_tokens": len(words), "total_tokens": 12 + len(words)}
            self._event({**base, "choices": [], "usage": usage})
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()

    def _event(self, chunk: dict) -> None:
        self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
        self.wfile.flush()

    def _json(self, data: object, status: int = 200) -> None:
        self._send(status, json.dumps(data).encode(), "application/json")

    def _send(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        return None


def main(argv: list[str]) -> None:
    """``ENGINE ARGS...``: serve on the --host/--port in ARGS until SIGTERM."""
    engine, args = argv[0], argv[1:]
    if target := os.environ.get("FAKE_ENGINE_ARGV"):
        Path(target).write_text(json.dumps(args))
    port = int(args[args.index("--port") + 1])
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with FakeEngine(engine, port=port):
        stop.wait()


if __name__ == "__main__":
    main(sys.argv[1:])
