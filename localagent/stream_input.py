"""``--input-format stream-json``: one process, many turns, driven over stdin as Claude Code is.

Each stdin line is one JSON message. ``user`` messages are turns, run one after another; each
answers with Claude Code's stream-json messages and one ``result``. ``control_request`` lines
are answered with a ``control_response`` (success or error, never silence): ``initialize``,
``interrupt`` (the running turn is cancelled and still ends with its result),
``set_permission_mode``, ``set_model``, ``mcp_status`` and ``get_context_usage``. With
``--permission-prompt-tool stdio`` a call that needs approval becomes a ``can_use_tool``
request to the SDK, whose answer is the approval. The process exits 0 once stdin closes and the
last turn has ended.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import sys
import threading
from collections.abc import Awaitable, Callable
from typing import Any, TextIO

from agent.approval import Approval, ApprovalRequest
from localagent.agent_options import AgentOptions
from localagent.agent_setup import AgentRuntime, build_agent
from localagent.claude_cli import PERMISSION_MODES
from localagent.console import err
from localagent.context import AppContext
from localagent.headless import HeadlessRunner
from localagent.sdk_hooks import SdkHooks
from localagent.stream_json import MCP_STATUS, json_line
from localagent.stream_json import PERMISSION_MODES as CLAUDE_MODES

ReadLine = Callable[[], Awaitable[bytes]]


async def serve_stream_json(ctx: AppContext, options: AgentOptions, *, partial: bool, ask_sdk: bool) -> int:
    """Read stdin from the start: while the agent is built, the SDK's servers (``"type": "sdk"``)
    are reached through it, and its ``initialize`` waits for the agent."""
    from localagent.run_command import session_info

    session = StreamSession(sys.stdout, partial=partial, ask_sdk=ask_sdk)
    reading = asyncio.create_task(session.serve(stdin_lines()))
    try:
        runtime = await build_agent(ctx, options, approve=session.approve if ask_sdk else None, mcp_relay=session.relay)
    except BaseException:
        reading.cancel()
        raise
    try:
        for note in runtime.notes:
            err.print(f"warning: {note}", soft_wrap=True, markup=False, highlight=False)
        session.attach(runtime, lambda: session_info(ctx, runtime))
        return await reading
    finally:
        await runtime.close()


def stdin_lines() -> ReadLine:
    """Lines of stdin, read by a daemon thread (stdin may be a file, a pipe or a socket, and a
    process that stops early must not wait for a read that never ends); b"" at its end."""
    loop = asyncio.get_running_loop()
    lines: asyncio.Queue[bytes] = asyncio.Queue()

    def read() -> None:
        while True:
            line = sys.stdin.buffer.readline()
            loop.call_soon_threadsafe(lines.put_nowait, line)
            if not line:
                return

    threading.Thread(target=read, name="stdin", daemon=True).start()
    return lines.get


class StreamSession:
    def __init__(self, out: TextIO, *, partial: bool, ask_sdk: bool) -> None:
        self.out = out
        self.partial = partial
        self.ask_sdk = ask_sdk
        self.runtime: AgentRuntime | None = None
        self._info: Callable[[], Any] | None = None
        # Each prompt, with the control requests read before it: they are settled before it runs.
        self._turns: asyncio.Queue[tuple[str, list[asyncio.Task[None]]] | None] = asyncio.Queue()
        self._running: asyncio.Task[Any] | None = None
        self._asked: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._ids = itertools.count(1)
        self._ready = asyncio.Event()  # the agent is built
        self._closed = False  # stdin ended: no answer to a question can come any more
        self._answering: set[asyncio.Task[None]] = set()

    def attach(self, runtime: AgentRuntime, info: Callable[[], Any]) -> None:
        self.runtime, self._info = runtime, info
        self._ready.set()

    async def serve(self, read_line: ReadLine) -> int:
        worker = asyncio.create_task(self._run_turns())
        try:
            while line := await read_line():
                await self._take(line)
        finally:
            # stdin closed: no answer can come to a question still open (or asked later), and
            # the queued turns run before the process ends.
            self._closed = True
            for future in self._asked.values():
                if not future.done():
                    future.set_result({"subtype": "error", "error": "standard input closed"})
            await self._turns.put(None)
            await worker
        return 0

    # -- stdin -----------------------------------------------------------------------------

    async def _take(self, line: bytes) -> None:
        text = line.decode("utf-8", "replace").strip()
        if not text:
            return
        try:
            message = json.loads(text)
        except json.JSONDecodeError as exc:
            err.print(f"warning: a stdin line is not JSON ({exc.msg}); it is skipped", markup=False)
            return
        kind = message.get("type") if isinstance(message, dict) else None
        if kind in ("user", "control_request", "control_response") and not _well_formed(message):
            err.print(f"warning: a malformed {kind} message on stdin is skipped", markup=False)
            if kind == "control_request":
                self._write(_error_response(message.get("request_id"), "the request is not a JSON object"))
            return
        if kind == "user":
            await self._turns.put((user_text(message), list(self._answering)))
        elif kind == "control_request":
            # Answered beside the reading: a request may wait for the agent, whose building may
            # wait for answers that come on stdin.
            task = asyncio.create_task(self._answer(message))
            self._answering.add(task)
            task.add_done_callback(self._answering.discard)
        elif kind == "control_response":
            self._resolve(message.get("response") or {})
        elif kind == "control_cancel_request":
            future = self._asked.pop(str(message.get("request_id")), None)
            if future is not None and not future.done():
                future.set_result({"subtype": "error", "error": "cancelled"})
        elif kind not in ("keep_alive", "update_environment_variables"):
            err.print(f"warning: a stdin message of type {kind!r} is not served here; it is skipped", markup=False)

    async def _answer(self, message: dict[str, Any]) -> None:
        request_id = message.get("request_id")
        request = message.get("request") or {}
        await self._ready.wait()
        try:
            response = self._control(request)
        except Exception as exc:  # noqa: BLE001 - every request gets an answer, an error one when it cannot be served
            problem = str(exc) if isinstance(exc, ControlError) else f"{type(exc).__name__}: {exc}"
            self._write(_error_response(request_id, problem))
            return
        self._write(
            {
                "type": "control_response",
                "response": {"subtype": "success", "request_id": request_id, "response": response},
            }
        )

    def _control(self, request: dict[str, Any]) -> dict[str, Any]:
        subtype = request.get("subtype")
        agent = self._agent()
        if subtype == "initialize":
            self._register_hooks(request.get("hooks") or {})
            model = agent.config.model
            return {
                "hook_on_failure_supported": True,
                "commands": [],
                "output_style": "default",
                "available_output_styles": ["default"],
                "models": [{"value": model, "displayName": model, "description": "the model localagent talks to"}],
                "account": {},
            }
        if subtype == "interrupt":
            if self._running is not None and not self._running.done():
                self._running.cancel()
            return {}
        if subtype == "set_permission_mode":
            mode = request.get("mode")
            if mode not in PERMISSION_MODES:
                raise ControlError(f"unknown permission mode {mode!r}; use one of {', '.join(PERMISSION_MODES)}")
            agent.set_mode(PERMISSION_MODES[mode])
            return {}
        if subtype == "set_model":
            model = request.get("model")
            if model is not None and (not isinstance(model, str) or not model.strip()):
                raise ControlError("set_model needs a model name")
            if model:
                agent.config.model = model.strip()
            return {}
        if subtype == "mcp_status":
            mcp = self.runtime.mcp if self.runtime is not None else None
            servers = mcp.states() if mcp is not None else []
            return {"mcpServers": [{"name": s.name, "status": MCP_STATUS.get(s.state, s.state)} for s in servers]}
        if subtype == "get_context_usage":
            used, limit = agent.last_context_used, agent.n_ctx
            share = round(100 * used / limit, 1) if limit else None
            return {"totalTokens": used, "maxTokens": limit, "percentage": share}
        raise ControlError(f"control request {subtype!r} is not served by localagent")

    def _register_hooks(self, config: dict[str, Any]) -> None:
        if not config:
            return
        unserved = SdkHooks.unserved(config)
        if unserved:
            # Refused, not ignored: a hook meant to guard a call must not silently never run.
            raise ControlError(f"these hook events are not served by localagent: {', '.join(unserved)}")
        hooks = SdkHooks(self._ask, self._hook_base)
        hooks.register(config)
        self._agent().hooks = hooks

    def _hook_base(self) -> dict[str, Any]:
        runtime = self.runtime
        assert runtime is not None
        return {
            "session_id": runtime.session_id,
            "transcript_path": str(runtime.session_file or ""),
            "cwd": str(runtime.agent.tool_ctx.workspace),
            "permission_mode": CLAUDE_MODES.get(str(runtime.agent.policy.mode), "default"),
        }

    # -- turns -----------------------------------------------------------------------------

    async def _run_turns(self) -> None:
        await self._ready.wait()
        while (queued := await self._turns.get()) is not None:
            text, earlier = queued
            await asyncio.gather(*earlier, return_exceptions=True)
            assert self.runtime is not None and self._info is not None
            runner = HeadlessRunner(
                self.runtime.agent, "stream-json", self.out, info=self._info(), partial=self.partial
            )
            runner.summary.session_id = self.runtime.session_id
            self._running = asyncio.create_task(runner.run(text))
            try:
                await self._running
            except asyncio.CancelledError:
                this = asyncio.current_task()
                if this is not None and this.cancelling():
                    raise  # this session is being stopped, not the turn interrupted
            except Exception as exc:  # noqa: BLE001 - one turn's failure does not end the session
                err.print(f"error: the turn failed: {type(exc).__name__}: {exc}", markup=False)
            finally:
                self._running = None

    # -- asking the SDK --------------------------------------------------------------------

    async def approve(self, request: ApprovalRequest) -> Approval:
        """The agent's ``approve``: a ``can_use_tool`` request to the SDK, its answer the approval."""
        body = {
            "subtype": "can_use_tool",
            "tool_name": request.name,
            "input": request.arguments,
            "tool_use_id": request.call_id,
            "permission_suggestions": [],
            "decision_reason": request.reason,
        }
        return approval_from(await self._ask(body), request)

    async def relay(self, server: str, message: dict[str, Any]) -> dict[str, Any] | None:
        """tools.mcp.relay's channel to the SDK's own MCP servers: an ``mcp_message`` request."""
        answer = await self._ask({"subtype": "mcp_message", "server_name": server, "message": message})
        if answer.get("subtype") != "success":
            raise ConnectionError(f"the SDK's MCP server {server!r} did not answer: {answer.get('error', 'no answer')}")
        reply = (answer.get("response") or {}).get("mcp_response")
        return reply if isinstance(reply, dict) else None

    async def _ask(self, body: dict[str, Any]) -> dict[str, Any]:
        """A control request to the SDK, and its control response (an error one when none comes)."""
        if self._closed:
            return {"subtype": "error", "error": "standard input closed"}
        request_id = f"localagent_{next(self._ids)}"
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._asked[request_id] = future
        self._write({"type": "control_request", "request_id": request_id, "request": body})
        try:
            return await future
        finally:
            self._asked.pop(request_id, None)

    def _resolve(self, response: dict[str, Any]) -> None:
        future = self._asked.get(str(response.get("request_id")))
        if future is not None and not future.done():
            future.set_result(response)

    # -- writing ---------------------------------------------------------------------------

    def _write(self, message: dict[str, Any]) -> None:
        self.out.write(json_line(message))
        self.out.flush()

    def _agent(self) -> Any:
        if self.runtime is None:
            raise ControlError("the agent is still starting")
        return self.runtime.agent


def _well_formed(message: dict[str, Any]) -> bool:
    """The part each kind of message is read by is a JSON object."""
    key = {"user": "message", "control_request": "request", "control_response": "response"}[message["type"]]
    return isinstance(message.get(key), dict)


def _error_response(request_id: Any, error: str) -> dict[str, Any]:
    return {"type": "control_response", "response": {"subtype": "error", "request_id": request_id, "error": error}}


class ControlError(Exception):
    """A control request that cannot be served; its message goes back in the error response."""


def approval_from(response: dict[str, Any], request: ApprovalRequest) -> Approval:
    """The SDK's answer to ``can_use_tool``: allow (maybe with changed input) or deny (maybe
    with a message, maybe interrupting the turn). An error or anything else denies."""
    if response.get("subtype") != "success":
        return Approval("deny", message=f"The permission check failed: {response.get('error', 'no answer')}")
    body = response.get("response") or {}
    if body.get("behavior") == "allow":
        changed = body.get("updatedInput")
        return Approval("once", arguments=changed if isinstance(changed, dict) else None)
    message = body.get("message")
    return Approval(
        "deny", message=message if isinstance(message, str) and message else None, interrupt=bool(body.get("interrupt"))
    )


def user_text(message: dict[str, Any]) -> str:
    """The text of a ``user`` message: a string, or its text blocks joined."""
    content = message["message"].get("content")
    if isinstance(content, str):
        return content
    parts = [
        block.get("text", "") for block in content or [] if isinstance(block, dict) and block.get("type") == "text"
    ]
    return "\n\n".join(part for part in parts if part)
