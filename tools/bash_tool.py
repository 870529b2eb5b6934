"""The `bash` tool: run a shell command in the workspace with a timeout."""

from __future__ import annotations

import asyncio
import signal
import subprocess
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

from tools.base import Tool, ToolContext, ToolError, ToolResult
from tools.output_capture import OutputCapture
from tools.output_truncation import MAX_OUTPUT_CHARS, MAX_OUTPUT_LINES, cut_middle
from tools.process_group import TERMINATE_GRACE_SECONDS, signal_group, terminate_group
from tools.safe_env import filtered_environment
from tools.sandbox import PROTECTED, Confinement, ProtectedState, SandboxPolicy, confine

# After the shell exits, background jobs may still hold the output pipe open; wait this
# long for them before returning what has arrived.
OUTPUT_DRAIN_SECONDS = 1.0


class _CommandProtocol(asyncio.SubprocessProtocol):
    """Feeds output into the capture and signals exit and end of output separately."""

    def __init__(self, capture: OutputCapture) -> None:
        self.capture = capture
        self.exited = asyncio.Event()
        self.output_closed = asyncio.Event()

    def pipe_data_received(self, fd: int, data: bytes | str) -> None:
        self.capture.add(data if isinstance(data, bytes) else data.encode())

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if fd == 1:
            self.output_closed.set()

    def process_exited(self) -> None:
        self.exited.set()


class BashTool(Tool):
    name = "bash"
    description = (
        "Run a shell command with `bash -c` in the workspace directory and return its exit code "
        "and combined stdout+stderr. Stdin is empty, so interactive prompts fail: pass flags "
        "such as -y or --no-pager instead. Each call starts a fresh shell (cd and exports do not "
        "carry over). Long output is shortened to its head and tail and the full text is saved "
        "to a file whose path is given. The command and all its child processes are killed "
        "after `timeout` seconds (default 120, max 600). To leave a server running, redirect "
        "its output: `cmd > server.log 2>&1 &` (in a sandbox with its own process namespace, "
        "background jobs end with the command: start a server and use it in one command). Commands "
        "may run in a sandbox where writes outside the workspace and temp directories, network "
        "access, and changes to git's config and hooks, .gitmodules, the workspace's agent settings "
        "and shell start-up files are denied. When a command needs what the sandbox denies (git "
        "remote add, git config, the network), set `outside_sandbox` and say why in `reason`: the "
        "user is asked to approve it. Prefer the view, grep and glob tools for reading and searching "
        "files."
    )
    parameters = {
        "type": "object",
        "properties": {
            "command": {
                "type": "string",
                "minLength": 1,
                "description": "The shell command line to run.",
            },
            "timeout": {
                "type": "number",
                "exclusiveMinimum": 0,
                "maximum": 600,
                "description": "Seconds before the command is killed (default 120, max 600).",
            },
            "outside_sandbox": {
                "type": "boolean",
                "description": "Run without the sandbox; always needs the user's approval. Only when "
                "the command failed in the sandbox for a reason the sandbox gave.",
            },
            "reason": {
                "type": "string",
                "description": "With outside_sandbox: why the command needs it, shown to the user.",
            },
        },
        "required": ["command"],
        "additionalProperties": False,
    }
    reads_only = False

    def describe_call(self, args: dict[str, Any], workspace: Path | None = None) -> str:
        return str(args.get("command", "")) if isinstance(args, dict) else ""

    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        command: str = args["command"]
        timeout = min(float(args.get("timeout", ctx.bash_default_timeout)), ctx.bash_max_timeout)
        capture = OutputCapture(ctx.scratch_dir, "bash")
        loop = asyncio.get_running_loop()
        policy = _policy_for(args, ctx)
        # Only a workspace-write command can change a protected path; read-only writes nothing.
        protected = ProtectedState.read(ctx.workspace) if policy.mode == "workspace-write" else None
        try:
            confinement = confine(policy, ctx.workspace, ctx.scratch_dir)
        except OSError as exc:
            capture.close(keep_spool=False)
            raise ToolError(f"could not set up the bash sandbox: {exc.strerror or exc}") from exc
        try:
            transport, protocol = await _started(
                loop.subprocess_exec(
                    lambda: _CommandProtocol(capture),
                    *confinement.argv(["bash", "-c", command]),
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    cwd=ctx.workspace,
                    env=filtered_environment(ctx.env_allow),
                    # Own session = own process group, so a timeout can kill every descendant.
                    start_new_session=True,
                    preexec_fn=confinement.preexec_fn,
                    pass_fds=confinement.pass_fds,
                )
            )
        except asyncio.CancelledError:
            capture.close(keep_spool=False)
            raise
        except OSError as exc:
            capture.close(keep_spool=False)
            raise ToolError(f"could not start bash: {exc}") from exc
        except subprocess.SubprocessError as exc:
            # Raised when the preexec_fn failed: the sandbox could not be applied, so nothing ran.
            capture.close(keep_spool=False)
            raise ToolError("could not start bash: the kernel refused to apply the sandbox") from exc
        finally:
            confinement.close()

        timed_out, output_left_open = await _finished(transport, protocol, capture, timeout)
        if confinement.isolation == "landlock" and confinement.sandboxed:
            # Background jobs end with the command, as they do in bubblewrap's PID namespace: one
            # left running could change a protected path after the check below.
            signal_group(transport.get_pid(), signal.SIGKILL)
        exit_code = transport.get_returncode()
        restored = protected.restore_changes() if protected is not None else []
        return _build_result(command, capture, exit_code, timed_out, timeout, output_left_open, confinement, restored)


async def _finished(
    transport: asyncio.SubprocessTransport, protocol: _CommandProtocol, capture: OutputCapture, timeout: float
) -> tuple[bool, bool]:
    """Wait for the command (killing its group at the timeout or on cancel) and its output:
    (timed out, background jobs still held the output open)."""
    group_id = transport.get_pid()
    timed_out = False
    try:
        try:
            await asyncio.wait_for(protocol.exited.wait(), timeout)
        except TimeoutError:
            timed_out = True
            await terminate_group(group_id, protocol.exited)
            await _wait_quietly(protocol.exited, TERMINATE_GRACE_SECONDS)
        output_left_open = not await _wait_quietly(protocol.output_closed, OUTPUT_DRAIN_SECONDS)
    except asyncio.CancelledError:
        signal_group(group_id, signal.SIGKILL)
        capture.close(keep_spool=False)
        raise
    finally:
        # Closing our end of the pipe also stops background jobs still writing to it.
        transport.close()
    return timed_out, output_left_open


def _policy_for(args: dict[str, Any], ctx: ToolContext) -> SandboxPolicy:
    """The session's sandbox, or none for a call run `outside_sandbox`: only ever reached after
    the person (or an allow rule of theirs) approved it, since the policy asks in every mode."""
    policy = ctx.sandbox
    if not args.get("outside_sandbox") or policy.mode == "off":
        return policy
    if policy.mode == "read-only":
        raise ToolError("read-only mode never runs a command outside the sandbox")
    return SandboxPolicy(mode="off", network=True)


async def _started(
    spawn: Coroutine[Any, Any, tuple[asyncio.SubprocessTransport, _CommandProtocol]],
) -> tuple[asyncio.SubprocessTransport, _CommandProtocol]:
    """The started shell, even when the call is cancelled while it starts.

    asyncio forks the shell before it has wired up the output pipe. Cancelled in that window,
    its own clean-up kills the shell alone and then waits for the pipe to close, which a job the
    shell already put in the background holds open: the cancel would hang and the job live on.
    So the start is shielded; on cancellation it is let finish and its whole group is killed."""
    start = asyncio.ensure_future(spawn)
    try:
        return await asyncio.shield(start)
    except asyncio.CancelledError:
        try:
            transport, _protocol = await start
        except (OSError, subprocess.SubprocessError):
            raise asyncio.CancelledError from None  # nothing started
        signal_group(transport.get_pid(), signal.SIGKILL)
        transport.close()
        raise


async def _wait_quietly(event: asyncio.Event, seconds: float) -> bool:
    try:
        await asyncio.wait_for(event.wait(), seconds)
        return True
    except TimeoutError:
        return False


def _build_result(
    command: str,
    capture: OutputCapture,
    exit_code: int | None,
    timed_out: bool,
    timeout: float,
    output_left_open: bool,
    confinement: Confinement,
    restored: list[str],
) -> ToolResult:
    kept = bytes(capture.head) + bytes(capture.tail)
    text = kept.decode("utf-8", errors="replace")
    shortened = cut_middle(text, MAX_OUTPUT_CHARS, MAX_OUTPUT_LINES)
    if shortened is None:
        capture.close(keep_spool=False)
        body, full_output_path = text, None
    else:
        full_output_path = capture.close(keep_spool=True)
        # Output dropped from memory between head and tail was never part of `text`.
        cut_lines = shortened.cut_lines + capture.total_newlines - kept.count(b"\n")
        cut_chars = shortened.cut_chars + capture.dropped_bytes
        head = shortened.head if shortened.head.endswith("\n") else shortened.head + "\n"
        body = head + _cut_marker(cut_lines, cut_chars, full_output_path, capture) + shortened.tail

    status_lines: list[str] = []
    if timed_out:
        status_lines.append(f"[command timed out after {timeout:g} s; it and its child processes were killed]")
    elif exit_code is not None and exit_code < 0:
        status_lines.append(f"[exit code: {exit_code} (killed by {_signal_name(-exit_code)})]")
    else:
        status_lines.append(f"[exit code: {exit_code}]")
    if output_left_open:
        status_lines.append(
            "[background processes still hold the output open; their later output is discarded. "
            "Redirect background output to a file.]"
        )
    if restored:
        status_lines.append(
            f"[the sandbox put back protected paths this command changed: {', '.join(restored)}. "
            f"The sandbox never lets a command change {', '.join(PROTECTED)}; if this command needs "
            "to, run it again with outside_sandbox and a reason, and the user decides]"
        )
    if not body:
        body = "(no output)\n"
    elif not body.endswith("\n"):
        body += "\n"
    output = body + "\n".join(status_lines)
    return ToolResult(
        output=output,
        is_error=timed_out or exit_code != 0 or bool(restored),
        metadata={
            "command": command,
            "exit_code": exit_code,
            "timed_out": timed_out,
            "full_output_path": str(full_output_path) if full_output_path else None,
            "output_bytes": capture.total_bytes,
            "protected_restored": restored,
            **confinement.metadata(),
        },
    )


def _cut_marker(cut_lines: int, cut_chars: int, saved_to: Path | None, capture: OutputCapture) -> str:
    if saved_to is None:
        where = "the full output could not be saved"
    else:
        where = f"full output saved to {saved_to} (read it with bash: grep, sed -n, tail)"
        if capture.spool_overflowed:
            where += "; the file holds only the start of a very large output"
    return f"[... {cut_lines} lines ({cut_chars} chars) cut from the middle; {where} ...]\n"


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
