"""A small HTTP proxy of ours on 127.0.0.1, between an agent and llama-server, that records every
request the agent makes. It runs in a thread of the calling process, so a synchronous caller can
start an agent against it and read what it saw.

Two modes:

- ``answer``, to measure an agent's own prompt: a generation request is counted by the server's
  count route (``wire_protocols.COUNT_PATHS``) and answered at once with a minimal reply in its
  protocol, so the model never runs.
- ``forward``, to record a whole session (a benchmark): every request goes to the server, its
  answer streams back as it comes, and each generation request is recorded with its prompt tokens
  (the answer's usage) and llama-server's timings.

Anything else (a model list, the agent's own token counts, any method) is forwarded in both modes,
and recorded with no protocol. The agent may send any key: the meter sends the server's own.

The meter writes nothing on the person's terminal: a malformed request (a bad Content-Length or
chunk size, a field of the wrong type) is answered 400, a fault of the meter's own 500, each with
a one-line JSON error, and once an answer's status line has gone out no second one follows (an
answer that breaks off after it is cut short, its connection closed).

    with RequestMeter("http://127.0.0.1:8910", api_key=key, mode="forward") as meter:
        ...  # point the agent at meter.base_url and run it
    for request in meter.requests():
        print(request.path, request.prompt_tokens, request.timings)
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

import httpx2

from localagent.launch.metered_request import Arrival, MeteredRequest
from localagent.launch.minimal_replies import minimal_reply, request_problem
from localagent.launch.request_body import BadRequest, read_body
from localagent.launch.usage_reading import AnswerFacts, EventStreamReader, read_whole_answer
from localagent.launch.wire_protocols import COUNT_PATHS, WireProtocol, generation_protocol
from server.http import auth_headers, server_root

MeterMode = Literal["answer", "forward"]

# Counting tokenizes without running the model: seconds even for a long prompt on a CPU.
COUNT_TIMEOUT_S = 120.0
# A generation may prefill a long prompt before its first byte: no read deadline when forwarding.
_FORWARD_TIMEOUT = httpx2.Timeout(connect=10.0, read=None, write=60.0, pool=None)
# Headers that describe one connection, or the agent's credentials, are not passed on; the
# answer is asked for uncompressed so its usage can be read as it passes.
_NOT_FORWARDED = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
        "content-encoding",
        "accept-encoding",
        "authorization",
        "x-api-key",
    }
)


class RequestMeter:
    """The proxy; see the module's docstring. Use it as a context manager, or start() and stop()."""

    def __init__(
        self,
        upstream: str,
        *,
        api_key: str | None = None,
        mode: MeterMode = "forward",
        on_request: Callable[[MeteredRequest], None] | None = None,
    ) -> None:
        self.upstream = server_root(upstream)
        self.api_key = api_key
        self.mode = mode
        self.on_request = on_request
        self._records: list[MeteredRequest] = []
        self._lock = threading.Lock()
        self._client = httpx2.Client(timeout=_FORWARD_TIMEOUT)
        self._server = _MeterServer(self)
        self._thread: threading.Thread | None = None
        # The count route that answered 404 (a server that is not llama-server, or one too old):
        # nothing can be measured through it.
        self.missing_count_route: str | None = None

    @property
    def base_url(self) -> str:
        """The meter's root URL; an agent adds its own /v1 where it does."""
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> RequestMeter:
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join()
            self._thread = None
        self._server.server_close()
        self._client.close()

    def __enter__(self) -> RequestMeter:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def requests(self) -> list[MeteredRequest]:
        """What was recorded so far, in the order the answers finished."""
        with self._lock:
            return list(self._records)

    def _record(self, request: MeteredRequest) -> None:
        with self._lock:
            self._records.append(request)
        if self.on_request is not None:
            self.on_request(request)

    def _upstream_headers(self, incoming: Any) -> dict[str, str]:
        headers = {name: value for name, value in incoming.items() if name.lower() not in _NOT_FORWARDED}
        return headers | auth_headers(self.api_key)

    def count_prompt(self, protocol: WireProtocol, body: bytes) -> int:
        """The server's token count for a generation request's prompt; raises _MeterFailure."""
        url = self.upstream + COUNT_PATHS[protocol]
        headers = {"Content-Type": "application/json"} | auth_headers(self.api_key)
        try:
            answer = self._client.post(url, content=body, headers=headers, timeout=COUNT_TIMEOUT_S)
        except httpx2.HTTPError as exc:
            raise _MeterFailure(f"could not reach the server at {self.upstream}: {exc}") from None
        if answer.status_code == 404:
            self.missing_count_route = COUNT_PATHS[protocol]
            raise _MeterFailure(f"the server has no {COUNT_PATHS[protocol]} route (it answered 404)")
        try:
            tokens = answer.json()["input_tokens"] if answer.status_code == 200 else None
        except (ValueError, KeyError, TypeError):
            tokens = None
        if not isinstance(tokens, int):
            said = " ".join(answer.text.split())[:300]
            raise _MeterFailure(f"the server's {COUNT_PATHS[protocol]} answered {answer.status_code}: {said}")
        return tokens


class _MeterFailure(Exception):
    """What the meter could not do, in one line for the record and the agent."""


class _MeterServer(ThreadingHTTPServer):
    """The listening socket on a free loopback port, one thread per connection."""

    daemon_threads = True

    def __init__(self, meter: RequestMeter) -> None:
        super().__init__(("127.0.0.1", 0), _MeterHandler)
        self.meter = meter

    def handle_error(self, request: Any, client_address: Any) -> None:
        # socketserver prints a traceback here, on the terminal the agent runs in. The handler
        # answers its own failures; whatever still gets here (a connection that broke while a
        # failure was being answered) only ends that connection.
        pass


class _MeterHandler(BaseHTTPRequestHandler):
    # HTTP/1.1, so an agent's client may keep its connection: answers carry a length or are chunked.
    protocol_version = "HTTP/1.1"
    server: _MeterServer

    @property
    def meter(self) -> RequestMeter:
        return self.server.meter

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the agent's terminal is not ours to write on

    def do_POST(self) -> None:
        self._handle()

    def do_GET(self) -> None:
        self._handle()

    def do_PUT(self) -> None:
        self._handle()

    def do_DELETE(self) -> None:
        self._handle()

    def do_PATCH(self) -> None:
        self._handle()

    def do_HEAD(self) -> None:
        self._handle()

    def do_OPTIONS(self) -> None:
        self._handle()

    def _handle(self) -> None:
        # One handler serves every request of a kept-alive connection.
        self._response_started = False
        arrival = Arrival(
            method=self.command,
            path=self.path,
            body=b"",
            protocol=generation_protocol(self.command, self.path),
            started_at=time.time(),
            started=time.monotonic(),
        )
        try:
            try:
                arrival.body = read_body(self.headers, self.rfile)
            except BadRequest as exc:
                self.close_connection = True  # where this request ends, and the next begins, is unknown
                self._fail(arrival, 400, str(exc))
                return
            if arrival.protocol is not None and self.meter.mode == "answer":
                self._answer(arrival, arrival.protocol)
            else:
                self._forward(arrival)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
            self._finish(arrival, 499, error="the agent closed the connection before the answer ended")
        except Exception as exc:  # noqa: BLE001 - a fault of the meter's: one line to the agent, no traceback
            self.close_connection = True
            self._fail(arrival, 500, f"the meter failed: {type(exc).__name__}: {' '.join(str(exc).split())}"[:300])

    def _finish(
        self, arrival: Arrival, status: int, facts: AnswerFacts | None = None, error: str | None = None
    ) -> None:
        """Record the request once, before its answer's last bytes go out: an agent that has read
        its answer finds the request already recorded."""
        if not arrival.recorded:
            arrival.recorded = True
            self.meter._record(arrival.record(status, facts, error))

    def _answer(self, arrival: Arrival, protocol: WireProtocol) -> None:
        """Count the prompt and reply at once (the ``answer`` mode)."""
        request = arrival.json_body()
        if request is None:
            self._fail(arrival, 400, "the request body is not a JSON object")
            return
        problem = request_problem(protocol, request)
        if problem is not None:
            self._fail(arrival, 400, problem)
            return
        try:
            tokens = self.meter.count_prompt(protocol, arrival.body)
        except _MeterFailure as exc:
            self._fail(arrival, 502, str(exc))
            return
        reply = minimal_reply(protocol, request, tokens)
        self._finish(arrival, 200, AnswerFacts(usage_prompt_tokens=tokens))
        self._send_whole(200, reply.content_type, reply.body)

    def _forward(self, arrival: Arrival) -> None:
        """Pass the request to the server and its answer back, streamed as it comes."""
        meter = self.meter
        url = meter.upstream + arrival.path
        headers = meter._upstream_headers(self.headers)
        try:
            with meter._client.stream(arrival.method, url, content=arrival.body, headers=headers) as answer:
                self._relay(arrival, answer)
        except httpx2.HTTPError as exc:
            if self._response_started:
                self._fail(arrival, 502, f"the server's answer broke off: {exc}")
            else:
                self._fail(arrival, 502, f"could not reach the server at {meter.upstream}: {exc}")

    def _relay(self, arrival: Arrival, answer: httpx2.Response) -> None:
        error = None if answer.status_code < 400 else f"the server answered {answer.status_code}"
        streamed = answer.headers.get("content-type", "").startswith("text/event-stream")
        body = b""
        if not streamed:
            # Read whole before the status line goes out: a read that fails is still answered (502).
            try:
                body = answer.read()
            except httpx2.HTTPError as exc:
                self._fail(arrival, 502, f"the server's answer broke off: {exc}")
                return
        self._start_response(answer.status_code)
        for name, value in answer.headers.items():
            if name.lower() not in _NOT_FORWARDED:
                self.send_header(name, value)
        if not streamed:
            # A HEAD answer has no body, and says the length a GET's would have.
            length = answer.headers.get("content-length", "0") if self.command == "HEAD" else str(len(body))
            self.send_header("Content-Length", length)
            self.end_headers()
            self._finish(arrival, answer.status_code, read_whole_answer(body) if arrival.protocol else None, error)
            self.wfile.write(body)
            return
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        facts = AnswerFacts()
        reader = EventStreamReader(facts)
        for chunk in answer.iter_bytes():
            if not chunk:
                continue  # an empty chunk would end the chunked answer early
            reader.feed(chunk)
            self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        reader.close()
        self._finish(arrival, answer.status_code, facts if arrival.protocol else None, error)
        self.wfile.write(b"0\r\n\r\n")

    def _fail(self, arrival: Arrival, status: int, message: str) -> None:
        """Record the failure and answer it; once an answer has begun, only cut it short."""
        self._finish(arrival, status, error=message)
        if self._response_started:
            self.close_connection = True  # the answer's end is unknown to the agent: no second one
            return
        self._send_whole(status, "application/json", _error_body(message))

    def _start_response(self, status: int) -> None:
        """The status line, from which on this request's answer has begun (its headers are
        buffered until end_headers: a second status line would land in the same head)."""
        self._response_started = True
        self.send_response(status)

    def _send_whole(self, status: int, content_type: str, body: bytes) -> None:
        self._start_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)


def _error_body(message: str) -> bytes:
    # Both OpenAI's and Anthropic's clients read error.message.
    return json.dumps({"type": "error", "error": {"type": "api_error", "message": message}}).encode()
