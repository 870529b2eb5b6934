"""A scripted, OpenAI-compatible chat server on loopback for agent-loop tests.

It plays a list of pre-written assistant turns over real HTTP, in the wire
format llama-server uses (SSE chunks, tool-call deltas by index, cumulative
`timings`, prompt-cache accounting), so the agent's real client code path is
exercised while the test decides what the "model" says. The real llama-server
is covered by separate, slower tests.

Only the standard library is used; the server runs a ThreadingHTTPServer in a
background thread, so it works the same from sync and async tests.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import struct
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, TypeAlias

__all__ = [
    "CONTEXT_OVERFLOW_MESSAGE",
    "EXHAUSTED_TEXT",
    "ScriptedModelServer",
    "ScriptedToolCall",
    "ScriptedTurn",
    "TurnSource",
]

EXHAUSTED_TEXT = "(script exhausted)"
# llama.cpp's wording for a prompt that does not fit the slot.
CONTEXT_OVERFLOW_MESSAGE = "the request exceeds the available context size, try increasing it"
# Pseudo-token size: close enough to real tokenisers for budget arithmetic.
CHARS_PER_TOKEN = 4


@dataclass
class ScriptedToolCall:
    name: str
    # A str is sent verbatim, so tests can hand the agent malformed JSON.
    arguments: dict[str, Any] | str = field(default_factory=dict)
    id: str | None = None

    def arguments_text(self) -> str:
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(self.arguments, ensure_ascii=False)


@dataclass
class ScriptedTurn:
    text: str = ""
    reasoning: str = ""
    tool_calls: list[ScriptedToolCall] = field(default_factory=list)
    # None -> "tool_calls" when there are tool calls, else "stop".
    finish_reason: str | None = None
    # Seconds of silence after the response headers, like prompt processing.
    delay_first_token: float = 0.0
    # Seconds between streamed chunks, to give cancellation tests a window.
    chunk_delay: float = 0.0
    # Characters per content/reasoning/arguments delta.
    chunk_size: int = 8
    # Drop the connection without finishing the chunked body.
    die_midstream: bool = False
    die_after_chunks: int = 3
    # Answer with this HTTP status and a llama.cpp-style error body instead.
    http_error: int | None = None
    error_message: str | None = None
    error_type: str | None = None

    @classmethod
    def context_overflow(cls) -> ScriptedTurn:
        """A 400 exceed_context_size_error; n_prompt_tokens/n_ctx are filled per request."""
        return cls(http_error=400, error_message=CONTEXT_OVERFLOW_MESSAGE, error_type="exceed_context_size_error")

    def resolved_finish_reason(self) -> str:
        if self.finish_reason is not None:
            return self.finish_reason
        return "tool_calls" if self.tool_calls else "stop"


# A turn may also be computed from the request the agent sent (e.g. to look at
# the tool results it carries), or given as plain text for brevity.
TurnSource: TypeAlias = ScriptedTurn | Callable[[dict[str, Any]], ScriptedTurn] | str

_DEFAULT_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    404: "not_found_error",
    500: "server_error",
    501: "not_supported_error",
    503: "unavailable_error",
}


def _tokens(n_chars: int) -> int:
    return (n_chars + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN


def _pieces(text: str, size: int) -> Iterator[str]:
    size = max(1, size)
    for i in range(0, len(text), size):
        yield text[i : i + size]


class _Abort(Exception):
    """Raised inside a handler to drop the connection abruptly."""


@dataclass
class _Accounting:
    cache_n: int
    prompt_n: int
    # A request sent with speculative.n_max 0 drafts nothing, as on localagent's patched server.
    drafts: bool = True


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    owner: ScriptedModelServer


class ScriptedModelServer:
    """Serve `turns` in order on 127.0.0.1, one per chat-completion request.

    Use as `with ScriptedModelServer([...]) as srv:` or `async with`.
    `srv.requests` holds every chat request body received, in order.
    """

    def __init__(
        self,
        turns: Iterable[TurnSource] = (),
        n_ctx: int = 8192,
        model: str = "scripted",
        *,
        speculative: bool = False,
        draft_acceptance: float = 0.75,
        tokens_per_second: float = 50.0,
        prompt_tokens_per_second: float = 1000.0,
        enforce_n_ctx: bool = True,
    ) -> None:
        self.n_ctx = n_ctx
        self.model = model
        self.speculative = speculative
        self.draft_acceptance = draft_acceptance
        self.tokens_per_second = tokens_per_second
        self.prompt_tokens_per_second = prompt_tokens_per_second
        # Reject prompts larger than n_ctx like llama-server does, without
        # consuming a turn (the real server never starts generating).
        self.enforce_n_ctx = enforce_n_ctx
        # While True every endpoint answers 503 "Loading model".
        self.loading = False

        self.requests: list[dict[str, Any]] = []
        self.served: list[ScriptedTurn] = []
        self.exhausted = 0
        self.disconnects = 0
        self.callback_errors: list[BaseException] = []

        self._turns: deque[TurnSource] = deque(turns)
        self._lock = threading.Lock()
        self._prev_prompt = ""
        self._processing = 0
        self._metrics: dict[str, float] = {
            "prompt_tokens_total": 0,
            "prompt_tokens_cached_total": 0,
            "prompt_seconds_total": 0.0,
            "tokens_predicted_total": 0,
            "tokens_predicted_seconds_total": 0.0,
            "n_decode_total": 0,
            "spec_decode_num_drafts_total": 0,
            "spec_decode_num_draft_tokens_total": 0,
            "spec_decode_num_accepted_tokens_total": 0,
        }
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._connections: set[socket.socket] = set()
        self.host = "127.0.0.1"
        self.port = 0

    # --- lifecycle --------------------------------------------------------------

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"

    @property
    def remaining(self) -> int:
        with self._lock:
            return len(self._turns)

    def add_turns(self, *turns: TurnSource) -> None:
        with self._lock:
            self._turns.extend(turns)

    def start(self) -> ScriptedModelServer:
        if self._httpd is not None:
            return self
        httpd = _HTTPServer((self.host, 0), _Handler)
        httpd.owner = self
        self.port = httpd.server_address[1]
        self._httpd = httpd
        # A short poll interval keeps shutdown() (and so each test) fast.
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, name=f"scripted-model:{self.port}", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        httpd.shutdown()
        # Keep-alive handler threads sit in a blocking read; wake them up.
        with self._lock:
            conns = list(self._connections)
        for conn in conns:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _raise_callback_errors(self) -> None:
        if self.callback_errors:
            raise RuntimeError("a scripted turn callable raised") from self.callback_errors[0]

    def __enter__(self) -> ScriptedModelServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
        # A broken callable is a bug in the test: don't let it pass silently,
        # but don't mask an exception that is already on its way out.
        if exc_type is None:
            self._raise_callback_errors()

    async def __aenter__(self) -> ScriptedModelServer:
        return self.start()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await asyncio.to_thread(self.stop)
        if exc_type is None:
            self._raise_callback_errors()

    # --- state used by the handler --------------------------------------------------

    def _track(self, conn: socket.socket, add: bool) -> None:
        with self._lock:
            (self._connections.add if add else self._connections.discard)(conn)

    @staticmethod
    def serialize_prompt(body: dict[str, Any]) -> str:
        # Tools first, like chat templates render them into the system prompt,
        # so an append-only history keeps a growing common prefix.
        return json.dumps(
            {"tools": body.get("tools") or [], "messages": body.get("messages") or []},
            ensure_ascii=False,
            separators=(",", ":"),
        )

    def prompt_tokens(self, body: dict[str, Any]) -> int:
        return _tokens(len(self.serialize_prompt(body)))

    def _account_prompt(self, prompt: str) -> _Accounting:
        """Emulate the slot's prompt cache: reuse the prefix shared with the last prompt."""
        total = _tokens(len(prompt))
        common = len(os.path.commonprefix([self._prev_prompt, prompt]))
        cache_n = common // CHARS_PER_TOKEN
        # llama.cpp always evaluates at least one token to get fresh logits.
        if total > 0 and cache_n >= total:
            cache_n = total - 1
        self._prev_prompt = prompt
        return _Accounting(cache_n=cache_n, prompt_n=total - cache_n)

    def _next_turn(self, body: dict[str, Any]) -> ScriptedTurn | dict[str, Any]:
        """The turn to play, or an error body (dict with "status") to send instead."""
        with self._lock:
            self.requests.append(body)
            if self.loading:
                return {"status": 503, "message": "Loading model", "type": "unavailable_error"}
            n_prompt = self.prompt_tokens(body)
            if self.enforce_n_ctx and n_prompt > self.n_ctx:
                return {
                    "status": 400,
                    "message": CONTEXT_OVERFLOW_MESSAGE,
                    "type": "exceed_context_size_error",
                    "n_prompt_tokens": n_prompt,
                    "n_ctx": self.n_ctx,
                }
            source: TurnSource | None = self._turns.popleft() if self._turns else None
        if source is None:
            turn = ScriptedTurn(text=EXHAUSTED_TEXT)
            with self._lock:
                self.exhausted += 1
        elif isinstance(source, ScriptedTurn):
            turn = source
        elif isinstance(source, str):
            turn = ScriptedTurn(text=source)
        else:
            # Called outside the lock: a callable may inspect server state.
            try:
                turn = source(body)
            except Exception as exc:  # noqa: BLE001 - reported to the test at exit
                with self._lock:
                    self.callback_errors.append(exc)
                return {"status": 500, "message": f"scripted turn raised: {exc!r}", "type": "server_error"}
            if not isinstance(turn, ScriptedTurn):
                err = TypeError(f"turn callable returned {type(turn).__name__}, not ScriptedTurn")
                with self._lock:
                    self.callback_errors.append(err)
                return {"status": 500, "message": str(err), "type": "server_error"}
        with self._lock:
            self.served.append(turn)
        return turn

    def timings(self, acc: _Accounting, predicted_n: int) -> dict[str, Any]:
        prompt_ms = acc.prompt_n * 1000.0 / self.prompt_tokens_per_second
        predicted_ms = predicted_n * 1000.0 / self.tokens_per_second
        out: dict[str, Any] = {
            "cache_n": acc.cache_n,
            "prompt_n": acc.prompt_n,
            "prompt_ms": prompt_ms,
            "prompt_per_second": acc.prompt_n * 1000.0 / prompt_ms if prompt_ms else 0.0,
            "predicted_n": predicted_n,
            "predicted_ms": predicted_ms,
            "predicted_per_second": predicted_n * 1000.0 / predicted_ms if predicted_ms else 0.0,
        }
        # llama.cpp omits the draft fields until something was drafted
        # (absent is not the same as zero), and always without speculation.
        draft_n = predicted_n if self.speculative and acc.drafts else 0
        if draft_n > 0:
            out["draft_n"] = draft_n
            out["draft_n_accepted"] = round(draft_n * self.draft_acceptance)
        return out

    def _record_generation(self, acc: _Accounting, predicted_n: int) -> None:
        t = self.timings(acc, predicted_n)
        with self._lock:
            m = self._metrics
            m["prompt_tokens_total"] += acc.prompt_n
            m["prompt_tokens_cached_total"] += acc.cache_n
            m["prompt_seconds_total"] += t["prompt_ms"] / 1000.0
            m["tokens_predicted_total"] += predicted_n
            m["tokens_predicted_seconds_total"] += t["predicted_ms"] / 1000.0
            m["n_decode_total"] += predicted_n
            if "draft_n" in t:
                m["spec_decode_num_drafts_total"] += max(1, predicted_n // 4)
                m["spec_decode_num_draft_tokens_total"] += t["draft_n"]
                m["spec_decode_num_accepted_tokens_total"] += t["draft_n_accepted"]

    def metrics_text(self) -> str:
        with self._lock:
            m = dict(self._metrics)
            processing = self._processing
        counters = [
            ("prompt_tokens_total", "Number of prompt tokens processed."),
            ("prompt_tokens_cached_total", "Number of prompt tokens reused from the cache."),
            ("prompt_seconds_total", "Prompt process time"),
            ("tokens_predicted_total", "Number of generation tokens processed."),
            ("tokens_predicted_seconds_total", "Predict process time"),
            ("n_decode_total", "Total number of llama_decode() calls"),
        ]
        if self.speculative:
            counters += [
                ("spec_decode_num_drafts_total", "Number of speculative drafts."),
                ("spec_decode_num_draft_tokens_total", "Number of drafted tokens."),
                ("spec_decode_num_accepted_tokens_total", "Number of accepted drafted tokens."),
            ]
        lines: list[str] = []
        for name, help_text in counters:
            lines += [
                f"# HELP llamacpp:{name} {help_text}",
                f"# TYPE llamacpp:{name} counter",
                f"llamacpp:{name} {m[name]:g}",
            ]
        tps = (
            m["tokens_predicted_total"] / m["tokens_predicted_seconds_total"]
            if m["tokens_predicted_seconds_total"]
            else 0.0
        )
        for name, help_text, value in (
            ("predicted_tokens_seconds", "Average generation throughput in tokens/s.", tps),
            ("requests_processing", "Number of requests processing.", processing),
            ("n_tokens_max", "Largest observed n_tokens.", self.n_ctx),
        ):
            lines += [
                f"# HELP llamacpp:{name} {help_text}",
                f"# TYPE llamacpp:{name} gauge",
                f"llamacpp:{name} {value:g}",
            ]
        return "\n".join(lines) + "\n"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _HTTPServer
    # Idle keep-alive connections give up eventually instead of lingering.
    timeout = 60

    # --- plumbing ---------------------------------------------------------------

    @property
    def owner(self) -> ScriptedModelServer:
        return self.server.owner

    def setup(self) -> None:
        super().setup()
        self.owner._track(self.connection, True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.owner._track(self.connection, False)

    def log_message(self, format: str, *args: Any) -> None:
        # Quiet: pytest output should show the test's own failures only.
        pass

    def _send_json(self, status: int, payload: Any, *, content_type: str = "application/json") -> None:
        data = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _send_error_body(self, status: int, message: str, err_type: str, **extra: Any) -> None:
        self._send_json(status, {"error": {"code": status, "message": message, "type": err_type, **extra}})

    def _abort(self) -> None:
        # SO_LINGER 0 makes close() send a RST: an abrupt drop, not a clean EOF.
        self.close_connection = True
        try:
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _read_body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    # --- routes ---------------------------------------------------------------------

    def do_GET(self) -> None:
        owner = self.owner
        path = self.path.split("?", 1)[0].rstrip("/")
        if owner.loading:
            self._send_error_body(503, "Loading model", "unavailable_error")
            return
        if path == "/health":
            self._send_json(200, {"status": "ok"})
        elif path in ("/v1/models", "/models"):
            meta = {
                "vocab_type": 2,
                "n_vocab": 262144,
                "n_ctx_train": max(owner.n_ctx, 32768),
                "n_ctx": owner.n_ctx,
                "n_embd": 640,
                "n_params": 268_098_176,
                "size": 253_000_000,
            }
            model = {
                "id": owner.model,
                "object": "model",
                "created": int(time.time()),
                "owned_by": "llamacpp",
                "meta": meta,
            }
            self._send_json(200, {"object": "list", "data": [model]})
        elif path == "/props":
            self._send_json(
                200,
                {
                    "default_generation_settings": {
                        "n_ctx": owner.n_ctx,
                        "speculative": owner.speculative,
                        "params": {},
                    },
                    "total_slots": 1,
                    "model_path": f"/models/{owner.model}.gguf",
                    "build_info": "b11434-scripted",
                    "chat_template": "",
                    "chat_template_caps": {"supports_tools": True, "supports_tool_calls": True},
                },
            )
        elif path == "/slots":
            self._send_json(
                200,
                [
                    {
                        "id": 0,
                        "n_ctx": owner.n_ctx,
                        "speculative": owner.speculative,
                        "is_processing": owner._processing > 0,
                    }
                ],
            )
        elif path == "/metrics":
            self._send_json(200, owner.metrics_text(), content_type="text/plain; version=0.0.4")
        else:
            self._send_error_body(404, "File Not Found", "not_found_error")

    def do_POST(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        raw = self._read_body()
        if path not in ("/v1/chat/completions", "/chat/completions"):
            self._send_error_body(404, "File Not Found", "not_found_error")
            return
        try:
            body = json.loads(raw or b"{}")
            if not isinstance(body, dict):
                raise ValueError("request body must be a JSON object")
        except ValueError as exc:
            self._send_error_body(400, f"invalid JSON body: {exc}", "invalid_request_error")
            return
        owner = self.owner
        turn = owner._next_turn(body)
        if isinstance(turn, dict):
            status = turn.pop("status")
            message = turn.pop("message")
            err_type = turn.pop("type")
            self._send_error_body(status, message, err_type, **turn)
            return
        if turn.http_error is not None:
            self._send_scripted_error(turn, body)
            return
        with owner._lock:
            acc = owner._account_prompt(owner.serialize_prompt(body))
            acc.drafts = body.get("speculative.n_max") != 0
            owner._processing += 1
        try:
            if body.get("stream"):
                self._stream(turn, body, acc)
            else:
                self._complete(turn, acc)
        except _Abort:
            self._abort()
        except (BrokenPipeError, ConnectionResetError):
            # The client hung up mid-answer (e.g. the user cancelled).
            self.close_connection = True
            with owner._lock:
                owner.disconnects += 1
        finally:
            with owner._lock:
                owner._processing -= 1

    def _send_scripted_error(self, turn: ScriptedTurn, body: dict[str, Any]) -> None:
        status = turn.http_error or 500
        err_type = turn.error_type or _DEFAULT_ERROR_TYPES.get(status, "server_error")
        message = turn.error_message or f"scripted error {status}"
        extra: dict[str, Any] = {}
        if err_type == "exceed_context_size_error":
            extra = {"n_prompt_tokens": self.owner.prompt_tokens(body), "n_ctx": self.owner.n_ctx}
        self._send_error_body(status, message, err_type, **extra)

    # --- answers ----------------------------------------------------------------------

    @staticmethod
    def _tool_call_ids(turn: ScriptedTurn) -> list[str]:
        return [tc.id or f"call_{uuid.uuid4().hex[:24]}" for tc in turn.tool_calls]

    def _complete(self, turn: ScriptedTurn, acc: _Accounting) -> None:
        if turn.die_midstream:
            raise _Abort
        if turn.delay_first_token:
            time.sleep(turn.delay_first_token)
        owner = self.owner
        ids = self._tool_call_ids(turn)
        generated = len(turn.reasoning) + len(turn.text)
        generated += sum(len(tc.name) + len(tc.arguments_text()) for tc in turn.tool_calls)
        predicted_n = _tokens(generated)
        message: dict[str, Any] = {"role": "assistant", "content": turn.text or (None if turn.tool_calls else "")}
        if turn.reasoning:
            message["reasoning_content"] = turn.reasoning
        if turn.tool_calls:
            message["tool_calls"] = [
                {"id": i, "type": "function", "function": {"name": tc.name, "arguments": tc.arguments_text()}}
                for i, tc in zip(ids, turn.tool_calls)
            ]
        payload = {
            "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": owner.model,
            "system_fingerprint": "b11434-scripted",
            "choices": [{"index": 0, "message": message, "finish_reason": turn.resolved_finish_reason()}],
            "usage": self._usage(acc, predicted_n),
            "timings": owner.timings(acc, predicted_n),
        }
        owner._record_generation(acc, predicted_n)
        self._send_json(200, payload)

    @staticmethod
    def _usage(acc: _Accounting, predicted_n: int) -> dict[str, Any]:
        prompt_tokens = acc.cache_n + acc.prompt_n
        return {
            "completion_tokens": predicted_n,
            "prompt_tokens": prompt_tokens,
            "total_tokens": prompt_tokens + predicted_n,
            "prompt_tokens_details": {"cached_tokens": acc.cache_n},
        }

    @staticmethod
    def _deltas(turn: ScriptedTurn, ids: list[str]) -> Iterator[tuple[dict[str, Any], int]]:
        """(delta, generated characters it stands for), in llama-server's order."""
        yield {"role": "assistant", "content": None}, 0
        for piece in _pieces(turn.reasoning, turn.chunk_size):
            yield {"reasoning_content": piece}, len(piece)
        for piece in _pieces(turn.text, turn.chunk_size):
            yield {"content": piece}, len(piece)
        for index, (call_id, tc) in enumerate(zip(ids, turn.tool_calls)):
            head = {"index": index, "id": call_id, "type": "function", "function": {"name": tc.name, "arguments": ""}}
            yield {"tool_calls": [head]}, len(tc.name)
            for piece in _pieces(tc.arguments_text(), turn.chunk_size):
                yield {"tool_calls": [{"index": index, "function": {"arguments": piece}}]}, len(piece)

    def _write_chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def _stream(self, turn: ScriptedTurn, body: dict[str, Any], acc: _Accounting) -> None:
        owner = self.owner
        per_token = bool(body.get("timings_per_token"))
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        # Chunked encoding (not a close-delimited body) so that dying midway is
        # an incomplete message to the client, not a clean end of stream.
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.flush()
        if turn.delay_first_token:
            time.sleep(turn.delay_first_token)

        base = {
            "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": owner.model,
            "system_fingerprint": "b11434-scripted",
        }
        sent = 0
        generated = 0

        def emit(chunk: dict[str, Any]) -> None:
            nonlocal sent
            if turn.die_midstream and sent >= turn.die_after_chunks:
                raise _Abort
            if sent and turn.chunk_delay:
                time.sleep(turn.chunk_delay)
            self._write_chunk(b"data: " + json.dumps(chunk, ensure_ascii=False).encode() + b"\n\n")
            sent += 1

        for delta, n_chars in self._deltas(turn, self._tool_call_ids(turn)):
            generated += n_chars
            chunk = {**base, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": None}]}
            if per_token:
                chunk["timings"] = owner.timings(acc, _tokens(generated))
            emit(chunk)

        predicted_n = _tokens(generated)
        timings = owner.timings(acc, predicted_n)
        final = {
            **base,
            "choices": [{"index": 0, "delta": {}, "logprobs": None, "finish_reason": turn.resolved_finish_reason()}],
        }
        usage_chunk = {**base, "choices": [], "usage": self._usage(acc, predicted_n)}
        # Without timings_per_token llama.cpp puts timings on the last chunk only.
        last = usage_chunk if include_usage else final
        if per_token:
            final["timings"] = timings
            usage_chunk["timings"] = timings
        else:
            last["timings"] = timings
        emit(final)
        if include_usage:
            emit(usage_chunk)
        if turn.die_midstream:
            # The script asked to die but the answer was shorter than
            # die_after_chunks: still never send a complete stream.
            raise _Abort
        owner._record_generation(acc, predicted_n)
        self._write_chunk(b"data: [DONE]\n\n")
        self._write_chunk(b"")
