"""One MCP server connection, owned by one task for its whole life.

The mcp `Client` must be entered and exited in the same task (its transports hold anyio cancel
scopes), so each server gets an owner task that connects, lists the tools and then serves calls
from a queue until it is told to stop or the connection breaks. Callers only ever touch the
queue and a future per call. A broken connection fails the call in flight; the next call starts
a fresh owner once, and a server that cannot come back stays failed.
"""

from __future__ import annotations

import asyncio
import os
import time
from contextlib import AsyncExitStack
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any, Literal

import httpx2
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.sse import sse_client
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT, CallToolResult, Implementation
from mcp_types import Tool as RemoteTool

from tools.mcp.config import ServerConfig
from tools.mcp.names import sanitise
from tools.mcp.relay import Relay, relay_transport

StateName = Literal["starting", "ready", "failed", "disconnected"]

# Beyond the per-call timeout the client enforces itself: a backstop for a wedged transport.
CALL_GRACE_SECONDS = 5.0
# How long a server gets to exit after its stdin closes (the SDK then signals it, bounded too).
CLOSE_GRACE_SECONDS = 8.0
MAX_TOOL_PAGES = 100
MAX_STDERR_READ_BYTES = 4096
MAX_STDERR_LINE_CHARS = 200
# Harmless variables worth passing on besides the SDK's own short list (HOME, PATH, ...).
_EXTRA_INHERITED = ("LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "TZ")


class McpCallError(Exception):
    """A call that did not reach an answer; the message is shown to the model as the result."""


class _StartFailed(Exception):
    pass


@dataclass
class _Job:
    tool: str
    arguments: dict[str, Any]
    reply: asyncio.Future[CallToolResult]


class ServerConnection:
    def __init__(
        self, config: ServerConfig, log_dir: Path, *, cwd: Path | None = None, relay: Relay | None = None
    ) -> None:
        self.config = config
        self.cwd = cwd
        self.relay = relay
        self.log_path = log_dir / f"{sanitise(config.name)}.log"
        self.state: StateName = "starting"
        self.error: str | None = None
        self.tools: list[RemoteTool] = []
        self._task: asyncio.Task[None] | None = None
        self._queue: asyncio.Queue[_Job | None] | None = None
        self._closing = False
        self._lock = asyncio.Lock()
        self._log_offset = 0

    @property
    def name(self) -> str:
        return self.config.name

    async def start(self) -> bool:
        """Connect and list the tools; False (with `error` set) when the server cannot start."""
        self.state, self.error = "starting", None
        ready: asyncio.Future[list[RemoteTool]] = asyncio.get_running_loop().create_future()
        queue: asyncio.Queue[_Job | None] = asyncio.Queue()
        self._queue = queue
        self._task = asyncio.create_task(self._own(ready, queue), name=f"mcp-server-{self.name}")
        timeout = self.config.startup_timeout
        try:
            async with asyncio.timeout(timeout):
                tools = await asyncio.shield(ready)
        except TimeoutError:
            ready.cancel()
            await self._stop_owner(cancel_now=True)
            self._fail(f"did not start within {timeout:g} s")
            return False
        except _StartFailed as exc:
            await self._stop_owner(cancel_now=True)
            self._fail(str(exc))
            return False
        except asyncio.CancelledError:
            ready.cancel()
            await self._stop_owner(cancel_now=True)
            # Whoever cancelled (a turn the user stopped) may call again: let that call retry.
            self.state, self.error = "disconnected", "the start was cancelled"
            raise
        self.tools = tools
        self.state = "ready"
        return True

    async def call(self, tool: str, arguments: dict[str, Any]) -> CallToolResult:
        async with self._lock:
            if self.state == "disconnected" and not self._closing:
                # Reconnect once; a server that cannot come back stays failed.
                lost = self.error
                if not await self.start():
                    raise McpCallError(
                        f"MCP server {self.name} stopped ({lost}) and could not be restarted: {self.error}"
                    )
            if self.state != "ready" or self._queue is None:
                raise McpCallError(f"MCP server {self.name} is not available ({self.state}: {self.error})")
            reply: asyncio.Future[CallToolResult] = asyncio.get_running_loop().create_future()
            self._queue.put_nowait(_Job(tool, arguments, reply))
        try:
            async with asyncio.timeout(self.config.call_timeout + CALL_GRACE_SECONDS):
                return await asyncio.shield(reply)
        except TimeoutError:
            raise McpCallError(
                f"{tool} on MCP server {self.name} did not answer within {self.config.call_timeout:g} s"
            ) from None
        finally:
            if not reply.done():
                reply.cancel()

    async def close(self) -> None:
        self._closing = True
        await self._stop_owner()
        if self.state != "failed":
            self.state = "disconnected"
            self.error = self.error or "closed"

    # -- the owner task ------------------------------------------------------------------------

    async def _own(self, ready: asyncio.Future[list[RemoteTool]], queue: asyncio.Queue[_Job | None]) -> None:
        current: _Job | None = None
        reason = "the server closed the connection"
        try:
            async with AsyncExitStack() as stack:
                client = await self._connect(stack)
                tools = await _list_tools(client)
                if ready.done():
                    return
                ready.set_result(tools)
                while True:
                    job = await queue.get()
                    if job is None:
                        return
                    if job.reply.done():
                        continue  # the caller gave up while it waited
                    current = job
                    outcome = await self._call(client, job)
                    if not job.reply.done():
                        if isinstance(outcome, McpCallError):
                            job.reply.set_exception(outcome)
                        else:
                            job.reply.set_result(outcome)
                    current = None
        except asyncio.CancelledError:
            reason = "stopped"
            raise
        except Exception as exc:  # noqa: BLE001 - any failure of the transport ends this connection, never the agent
            reason = describe_error(exc)
        finally:
            self._settle(ready, current, queue, reason)

    async def _connect(self, stack: AsyncExitStack) -> Client:
        config = self.config
        if config.transport == "stdio":
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            # The child writes to this file directly: its stderr never reaches the terminal.
            log = stack.enter_context(self.log_path.open("a", encoding="utf-8"))
            self._log_offset = log.tell()
            log.write(f"--- {time.strftime('%Y-%m-%d %H:%M:%S')} starting {config.target()}\n")
            log.flush()
            params = StdioServerParameters(
                command=config.command,
                args=list(config.args),
                env=_child_env(config.env),
                cwd=config.cwd or self.cwd,
            )
            transport: Any = stdio_client(params, errlog=log)
        elif config.transport == "http":
            http = await stack.enter_async_context(
                httpx2.AsyncClient(headers=config.headers, timeout=httpx2.Timeout(30.0, read=300.0))
            )
            transport = streamable_http_client(config.url, http_client=http)
        elif config.transport == "sdk":
            if self.relay is None:
                raise ConnectionError("an sdk server is served by the program that started localagent, and none did")
            transport = relay_transport(config.name, self.relay)
        else:
            transport = sse_client(config.url, headers=config.headers or None)
        client = Client(transport, client_info=Implementation(name="localagent", version=_version()))
        return await stack.enter_async_context(client)

    async def _call(self, client: Client, job: _Job) -> CallToolResult | McpCallError:
        timeout = self.config.call_timeout
        request = asyncio.ensure_future(client.call_tool(job.tool, job.arguments, read_timeout_seconds=timeout))
        request.add_done_callback(_retrieve)
        # A caller that gives up (the user stopped the turn) cancels its request, so the next
        # call does not wait behind a slow tool nobody wants any more.
        job.reply.add_done_callback(lambda reply: request.cancel() if reply.cancelled() else None)
        try:
            await asyncio.wait({request})
        except asyncio.CancelledError:
            request.cancel()
            raise
        if request.cancelled():
            return McpCallError(f"the call to {job.tool} was cancelled")
        exc = request.exception()
        if exc is None:
            return request.result()
        if isinstance(exc, MCPError):
            if exc.error.code == REQUEST_TIMEOUT:
                return McpCallError(f"{job.tool} on MCP server {self.name} did not answer within {timeout:g} s")
            if exc.error.code == CONNECTION_CLOSED:
                raise exc  # the connection is gone: end this owner
            return McpCallError(f"MCP server {self.name} refused the call: {exc.error.message}")
        if isinstance(exc, OSError | httpx2.HTTPError | BaseExceptionGroup):
            raise exc
        # A malformed answer fails this call, not the connection.
        return McpCallError(f"the call to {job.tool} on MCP server {self.name} failed: {describe_error(exc)}")

    def _settle(
        self,
        ready: asyncio.Future[list[RemoteTool]],
        current: _Job | None,
        queue: asyncio.Queue[_Job | None],
        reason: str,
    ) -> None:
        """Nothing waits forever on a connection that is gone."""
        if not ready.done():
            ready.set_exception(_StartFailed(self._with_log_hint(reason)))
        lost = McpCallError(
            f"MCP server {self.name} stopped during the call ({reason}); the next call will try to restart it"
        )
        pending = [current] if current is not None else []
        while not queue.empty():
            job = queue.get_nowait()
            if job is not None:
                pending.append(job)
        for job in pending:
            if not job.reply.done():
                job.reply.set_exception(lost)
        if self.state == "ready" and not self._closing:
            self.state, self.error = "disconnected", reason

    async def _stop_owner(self, *, cancel_now: bool = False) -> None:
        task = self._task
        if task is None:
            return
        if not task.done():
            if not cancel_now and self._queue is not None:
                self._queue.put_nowait(None)
                await asyncio.wait({task}, timeout=CLOSE_GRACE_SECONDS)
            if not task.done():
                task.cancel()
                await asyncio.wait({task}, timeout=CLOSE_GRACE_SECONDS)
        if task.done() and not task.cancelled():
            task.exception()  # retrieved, so asyncio never prints it

    def _fail(self, message: str) -> None:
        self.state, self.error = "failed", message
        self.tools = []

    def _with_log_hint(self, reason: str) -> str:
        """The server's last words on stderr say more than "connection closed" does."""
        if self.config.transport != "stdio":
            return reason
        try:
            with self.log_path.open("rb") as log:
                log.seek(self._log_offset)
                written = log.read(MAX_STDERR_READ_BYTES * 64)[-MAX_STDERR_READ_BYTES:]
        except OSError:
            return reason
        lines = [line.strip() for line in written.decode("utf-8", "replace").splitlines()]
        said = [line for line in lines[1:] if line]  # the first line is our own header
        if not said:
            return reason
        last = said[-1] if len(said[-1]) <= MAX_STDERR_LINE_CHARS else said[-1][:MAX_STDERR_LINE_CHARS] + "..."
        return f"{reason}: {last} (its stderr is in {self.log_path})"


async def _list_tools(client: Client) -> list[RemoteTool]:
    tools: list[RemoteTool] = []
    cursor: str | None = None
    for _ in range(MAX_TOOL_PAGES):
        page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            break
    return tools


def describe_error(exc: BaseException) -> str:
    """One line for a person or the model, from whatever the SDK or the transport raised."""
    leaf = _first_leaf(exc)
    if isinstance(leaf, MCPError):
        if leaf.error.code == CONNECTION_CLOSED:
            return "the server closed the connection"
        return _first_line(leaf.error.message) or "the server answered with an error"
    if isinstance(leaf, FileNotFoundError):
        return f"command not found: {leaf.filename or leaf}"
    if isinstance(leaf, PermissionError):
        return f"cannot run {leaf.filename or 'the command'}: permission denied"
    if isinstance(leaf, httpx2.HTTPStatusError):
        return f"HTTP {leaf.response.status_code} from {leaf.request.url}"
    if isinstance(leaf, httpx2.ConnectError):
        return f"cannot connect: {_first_line(str(leaf)) or 'connection refused'}"
    if isinstance(leaf, httpx2.TimeoutException):
        return "the HTTP request timed out"
    if isinstance(leaf, httpx2.HTTPError):
        return f"HTTP error: {_first_line(str(leaf)) or type(leaf).__name__}"
    if isinstance(leaf, OSError) and leaf.strerror:
        return leaf.strerror
    return _first_line(str(leaf)) or type(leaf).__name__


def _retrieve(task: asyncio.Future[Any]) -> None:
    """Mark a finished request's exception as seen: asyncio would print it otherwise."""
    if not task.cancelled():
        task.exception()


def _first_leaf(exc: BaseException) -> BaseException:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        # Prefer a real error over the cancellations that accompany it.
        real = [e for e in exc.exceptions if not isinstance(e, asyncio.CancelledError)]
        exc = (real or list(exc.exceptions))[0]
    return exc


def _first_line(text: str) -> str:
    stripped = text.strip()
    return stripped.splitlines()[0] if stripped else ""


def _child_env(configured: dict[str, str]) -> dict[str, str]:
    env = {name: os.environ[name] for name in _EXTRA_INHERITED if name in os.environ}
    env.update(configured)
    return env


def _version() -> str:
    try:
        return metadata.version("localagent-dflash")
    except metadata.PackageNotFoundError:
        return "0"
