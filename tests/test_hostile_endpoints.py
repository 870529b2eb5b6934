"""What a stranger's endpoint or a model's text can do to the headless output: nothing that
crashes the start, hangs it, or breaks the one-message-a-line JSON stream."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from localagent.model_name import served_model_id
from localagent.stream_json import json_line


@contextmanager
def models_endpoint(answer: Callable[[BaseHTTPRequestHandler], None]) -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            try:
                answer(self)
            except (BrokenPipeError, ConnectionResetError):
                pass

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def send(body: bytes) -> Callable[[BaseHTTPRequestHandler], None]:
    def answer(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    return answer


def trickle(handler: BaseHTTPRequestHandler) -> None:
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    handler.end_headers()
    for _ in range(600):  # a byte every half second: each read is quick, the whole never ends
        handler.wfile.write(b" ")
        handler.wfile.flush()
        time.sleep(0.5)


async def test_a_normal_model_list_names_the_model() -> None:
    with models_endpoint(send(b'{"data": [{"id": "qwen3-coder"}]}')) as url:
        assert await served_model_id(url, None) == "qwen3-coder"


@pytest.mark.parametrize(
    "body",
    [
        b"[" * 100_000,
        b'{"data": [{"id": 5}]}',
        b'{"data": "x"}',
        b"not json",
        b'{"data": [' + b'{"id": "x"},' * 200_000 + b"{}]}",
    ],
    ids=["deeply-nested", "id-not-a-string", "data-not-a-list", "not-json", "over-a-mebibyte"],
)
async def test_a_hostile_model_list_is_no_answer_not_a_crash(body: bytes) -> None:
    with models_endpoint(send(body)) as url:
        assert await served_model_id(url, None) is None


async def test_an_endless_model_list_gives_up_at_its_deadline() -> None:
    with models_endpoint(trickle) as url:
        started = time.monotonic()
        assert await served_model_id(url, None, timeout=1.0) is None
        assert time.monotonic() - started < 30


def test_model_text_cannot_break_a_stream_json_line() -> None:
    message = {
        "type": "assistant",
        "input": {"timeout": float("nan"), "big": float("inf")},
        "text": "a\u2028b\u2029c\x85d\nе",
    }
    line = json_line(message)
    assert line.endswith("\n") and len(line.splitlines()) == 1

    def refuse(constant: str) -> None:
        raise ValueError(f"not JSON: {constant}")

    parsed = json.loads(line, parse_constant=refuse)
    assert parsed["input"] == {"timeout": None, "big": None}
    assert parsed["text"] == "a\u2028b\u2029c\x85d\nе"
