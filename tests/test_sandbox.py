"""The bash sandbox's Landlock layer against the real kernel: Landlock rules, the process boundary,
the seccomp filter, the secret filter."""

from __future__ import annotations

import errno
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.process_probe import gone, unique_seconds
from tools import BashTool, ToolContext, sandbox
from tools.safe_env import filtered_environment, looks_secret
from tools.sandbox import (
    LandlockSupport,
    SandboxPolicy,
    confine,
    landlock_abi,
    sandbox_available,
    sandbox_note,
    seccomp,
)

REPO = Path(__file__).resolve().parents[1]
ABI = landlock_abi()
needs_landlock = pytest.mark.skipif(ABI == 0, reason=f"no Landlock here: {sandbox.landlock_support().reason}")
needs_network_rules = pytest.mark.skipif(ABI < 4, reason=f"Landlock ABI {ABI} has no TCP rules (needs 4)")
needs_pid_namespace = pytest.mark.skipif(
    sandbox.pid_namespace_prefix() is None, reason="unprivileged user and PID namespaces are refused here"
)
NO_LANDLOCK = LandlockSupport(0, "simulated: this kernel has no Landlock")


@pytest.fixture(autouse=True)
def landlock_layer(monkeypatch: pytest.MonkeyPatch) -> None:
    """This file tests the Landlock layer (and what is left without it): bubblewrap is kept out.
    tests/test_sandbox_boundary.py runs the attacks under both layers."""
    monkeypatch.setattr(sandbox, "bubblewrap_status", lambda: (None, "kept out by the test"))


def make_ctx(tmp_path: Path, mode: str = "workspace-write", network: bool = False) -> ToolContext:
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    policy = SandboxPolicy(mode=mode, network=network)  # type: ignore[arg-type]  # mode is one of the Literal values, from the parameters
    return ToolContext(workspace=workspace, scratch_dir=tmp_path / "scratch", sandbox=policy)


async def bash(ctx: ToolContext, command: str, timeout: float | None = None) -> tuple[str, dict]:
    args: dict = {"command": command}
    if timeout is not None:
        args["timeout"] = timeout
    result = await BashTool().run(args, ctx)
    return result.output, result.metadata


def temp_roots() -> list[Path]:
    roots = [Path(p) for p in ("/tmp", "/var/tmp", "/dev/shm")]
    if os.environ.get("TMPDIR"):
        roots.append(Path(os.environ["TMPDIR"]))
    return [root.resolve() for root in roots if root.exists()]


@pytest.fixture
def outside_dir() -> Iterator[Path]:
    """A directory the test may write to but a workspace-write command may not: not a temp dir."""
    for base in (Path.home(), REPO):
        resolved = base.resolve()
        if base.is_dir() and os.access(base, os.W_OK) and not any(resolved.is_relative_to(r) for r in temp_roots()):
            made = Path(tempfile.mkdtemp(prefix=".localagent-sandbox-test-", dir=base))
            try:
                yield made
            finally:
                shutil.rmtree(made, ignore_errors=True)
            return
    pytest.skip("no writable directory outside the temp directories")


# --- Filesystem ------------------------------------------------------------------------------


@needs_landlock
async def test_workspace_write_blocks_writes_outside_but_reads_work(tmp_path: Path, outside_dir: Path) -> None:
    (outside_dir / "readme.txt").write_text("readable outside\n")
    ctx = make_ctx(tmp_path)
    command = f"cat {outside_dir}/readme.txt; echo x > {outside_dir}/new.txt; mkdir {outside_dir}/sub"
    output, meta = await bash(ctx, command + "; ls /etc >/dev/null && echo listed")
    assert "readable outside" in output
    assert "listed" in output
    assert "Permission denied" in output
    assert not (outside_dir / "new.txt").exists()
    assert not (outside_dir / "sub").exists()
    assert meta["sandboxed"] is True and meta["sandbox_mode"] == "workspace-write"


@needs_landlock
async def test_workspace_scratch_and_temp_dirs_are_writable(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path)
    ctx.scratch_dir.mkdir(parents=True, exist_ok=True)
    tag = secrets.token_hex(4)
    targets = [ctx.workspace / "made.txt", ctx.scratch_dir / f"s-{tag}", Path("/tmp") / f"t-{tag}"]
    targets += [Path(p) / f"v-{tag}" for p in ("/var/tmp", "/dev/shm") if Path(p).is_dir()]
    command = "; ".join(f"echo ok > {t} && mv {t} {t}.moved" for t in targets)
    command += f"; mkdir -p {ctx.workspace}/d/e && ln -s made.txt {ctx.workspace}/link && rm -r {ctx.workspace}/d"
    try:
        output, meta = await bash(ctx, command + "; echo $?")
        assert output.splitlines()[0] == "0", output
        for target in targets:
            assert Path(f"{target}.moved").read_text() == "ok\n"
        assert meta["sandboxed"] is True
    finally:
        for target in targets:
            Path(f"{target}.moved").unlink(missing_ok=True)


@needs_landlock
async def test_read_only_blocks_every_write_but_reads_and_git_log_work(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path, mode="read-only")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-C", str(ctx.workspace)]
    (ctx.workspace / "tracked.txt").write_text("tracked content\n")
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "tracked.txt"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "first commit"], check=True)
    tag = secrets.token_hex(4)
    output, meta = await bash(
        ctx,
        f"cat tracked.txt; ls; git log --oneline; git status --short; echo x > new.txt; rm -f tracked.txt; "
        f"echo y > /tmp/ro-{tag}; echo quiet > /dev/null && echo devnull-ok",
    )
    assert "tracked content" in output
    assert "first commit" in output
    assert "devnull-ok" in output
    assert (ctx.workspace / "tracked.txt").exists()
    assert not (ctx.workspace / "new.txt").exists()
    assert not Path(f"/tmp/ro-{tag}").exists()
    assert meta["sandboxed"] is True and meta["sandbox_mode"] == "read-only"


# --- Network ---------------------------------------------------------------------------------


@pytest.fixture
def listening_port() -> Iterator[int]:
    server = socket.create_server(("127.0.0.1", 0))
    try:
        yield server.getsockname()[1]
    finally:
        server.close()


@needs_landlock
@needs_network_rules
async def test_tcp_connect_and_bind_fail_with_network_off(tmp_path: Path, listening_port: int) -> None:
    ctx = make_ctx(tmp_path, network=False)
    bind = f"{sys.executable} -c \"import socket; socket.socket().bind(('127.0.0.1', 0)); print('bound')\""
    output, meta = await bash(ctx, f"exec 3<>/dev/tcp/127.0.0.1/{listening_port} && echo connected; {bind}")
    assert "connected" not in output
    assert "bound" not in output
    assert "Permission denied" in output
    assert meta["network_blocked"] is True


@needs_landlock
async def test_tcp_connect_works_with_network_on(tmp_path: Path, listening_port: int) -> None:
    ctx = make_ctx(tmp_path, network=True)
    output, meta = await bash(ctx, f"exec 3<>/dev/tcp/127.0.0.1/{listening_port} && echo connected")
    assert "connected" in output
    assert meta["network_blocked"] is False and meta["sandboxed"] is True


def mptcp_enabled() -> bool:
    try:
        return Path("/proc/sys/net/mptcp/enabled").read_text().strip() == "1"
    except OSError:
        return False


needs_mptcp = pytest.mark.skipif(not mptcp_enabled(), reason="the kernel has no MPTCP (net.mptcp.enabled)")

# Every way this filter knows to make an MPTCP socket, each printed as connected/created or an errno.
NETWORK_PROBE = """
import ctypes, json, mmap, os, platform, socket, sys
port = int(sys.argv[1])
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def result(value):
    return "created" if value >= 0 else -ctypes.get_errno() if value == -1 else value
def mptcp_connect():
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM, 262) as s:
            s.settimeout(5)
            s.connect(("127.0.0.1", port))
            return "connected"
    except OSError as exc:
        return exc.errno
def raw_socket(nr, protocol):
    fd = libc.syscall(ctypes.c_long(nr), ctypes.c_long(2), ctypes.c_long(1), ctypes.c_long(protocol))
    return result(fd)
def i386_socket():
    # push rbx; mov eax,359 (socket); mov ebx,2; mov ecx,1; mov edx,262; int 0x80; pop rbx; ret
    code = bytes.fromhex("53b867010000bb02000000b901000000ba06010000cd805bc3")
    try:
        page = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    except OSError:
        return None
    page.write(code)
    value = ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.addressof(ctypes.c_char.from_buffer(page)))()
    return "created" if value >= 0 else value
def io_uring():
    params = ctypes.create_string_buffer(120)
    return result(libc.syscall(ctypes.c_long(425), ctypes.c_long(1), params))
x86 = platform.machine() == "x86_64"
socket_nr = 41 if x86 else 198
print(json.dumps({
    "mptcp": mptcp_connect(),
    # The kernel reads only the low 32 bits of the protocol; so must the filter.
    "high_bits": raw_socket(socket_nr, (1 << 32) | 262),
    "x32": raw_socket(0x40000000 | 41, 262) if x86 else None,
    "i386": i386_socket() if x86 else None,
    "io_uring": io_uring(),
}))
"""


async def network_probe(tmp_path: Path, network: bool, port: int) -> tuple[dict, dict]:
    script = tmp_path / "network_probe.py"
    script.write_text(NETWORK_PROBE)
    output, meta = await bash(make_ctx(tmp_path, network=network), f"{sys.executable} {script} {port}")
    return json.loads(next(line for line in output.splitlines() if line.startswith("{"))), meta


@needs_landlock
@needs_network_rules
@needs_mptcp
async def test_mptcp_and_io_uring_fail_with_network_off(tmp_path: Path, listening_port: int) -> None:
    probe, meta = await network_probe(tmp_path, False, listening_port)
    # socket() is refused whatever its family and protocol: EACCES, by every system call table.
    assert probe["mptcp"] == errno.EACCES, probe
    assert probe["high_bits"] == -errno.EACCES, probe
    assert probe["x32"] in (None, -errno.EACCES, -errno.ENOSYS), probe
    assert probe["i386"] in (None, -errno.EACCES), probe
    assert probe["io_uring"] == -errno.ENOSYS, probe
    assert meta["network_blocked"] is True


@needs_landlock
@needs_mptcp
async def test_mptcp_and_io_uring_work_with_network_on(tmp_path: Path, listening_port: int) -> None:
    probe, meta = await network_probe(tmp_path, True, listening_port)
    assert probe["mptcp"] == "connected", probe
    assert probe["high_bits"] == "created", probe
    # Where the kernel runs i386 code or offers io_uring at all, the sandbox leaves them alone.
    assert probe["i386"] in (None, "created", -errno.ENOSYS), probe
    if (
        Path("/proc/sys/kernel/io_uring_disabled").exists()
        and Path("/proc/sys/kernel/io_uring_disabled").read_text().strip() == "0"
    ):
        assert probe["io_uring"] == "created", probe
    assert meta["network_blocked"] is False


@pytest.mark.parametrize("network_off", [True, False])
@pytest.mark.parametrize("machine", sorted(seccomp._TABLES))
def test_network_filter_assembles_for_every_known_machine(machine: str, network_off: bool) -> None:
    insns = seccomp._assemble(seccomp._filter_source(seccomp.rules_for(machine, network_off)))
    assert insns[0] == (0x20, 0, 0, 4)  # the arch is checked before any system call number
    for at, (code, jt, jf, _k) in enumerate(insns):
        assert 0 <= jt <= 255 and 0 <= jf <= 255
        if code == 0x15:  # a jump lands inside the program
            assert at + 1 + max(jt, jf) < len(insns)
    assert insns[-1][0] == 0x06  # every path ends in a return


def test_without_seccomp_network_is_not_claimed_blocked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox, "seccomp_reason", lambda: "simulated: no seccomp")
    policy = SandboxPolicy(mode="read-only")
    assert not sandbox_available(policy)
    assert sandbox_available(SandboxPolicy(mode="read-only", network=True)) == (ABI > 0)
    if ABI >= 4:
        note = sandbox_note(policy)
        assert note is not None and "simulated: no seccomp" in note and "\n" not in note
    confinement = confine(policy, tmp_path, tmp_path / "scratch")
    try:
        assert confinement.network_blocked is False
    finally:
        confinement.close()


def test_seccomp_filters_are_available_here() -> None:
    if sys.platform == "linux" and ABI >= 4:
        assert sandbox.seccomp_reason() == ""


# --- Process boundary ------------------------------------------------------------------------

# Runs the bash tool inside a process whose own environment (as exec'd, which is what
# /proc/PID/environ shows) holds the secrets, as the agent's does.
AGENT = """
import asyncio, json, sys
from pathlib import Path
from tools import BashTool, ToolContext, sandbox
from tools.sandbox import LandlockSupport, SandboxPolicy
mode, workspace, scratch, command, simulate = sys.argv[1:6]
if simulate == "no-landlock":
    sandbox.landlock_support = lambda: LandlockSupport(0, "simulated")
ctx = ToolContext(workspace=Path(workspace), scratch_dir=Path(scratch), sandbox=SandboxPolicy(mode=mode))
result = asyncio.run(BashTool().run({"command": command}, ctx))
print(json.dumps({"output": result.output, "metadata": result.metadata}))
"""


def run_as_agent(tmp_path: Path, mode: str, command: str, secret_env: dict[str, str], simulate: str = "") -> dict:
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    env = {**os.environ, **secret_env, "LOCALAGENT_SANDBOX_LAYER": "landlock"}
    done = subprocess.run(
        [sys.executable, "-c", AGENT, mode, str(workspace), str(tmp_path / "scratch"), command, simulate],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return json.loads(done.stdout)


def environ_probe(*needles: str) -> str:
    """Counts, for every ancestor and then every visible process, environ files holding a needle."""
    pattern = " ".join(f"-e {n}" for n in needles)
    return (
        "ancestors=0; hits=0; pid=$PPID\n"
        'while [ "${pid:-0}" -gt 0 ]; do\n'
        "  ancestors=$((ancestors+1))\n"
        f"  if {{ tr '\\0' '\\n' < /proc/$pid/environ; }} 2>/dev/null | grep -q -F {pattern}; then hits=$((hits+1)); fi\n"
        "  pid=$(awk '/^PPid:/{print $2}' /proc/$pid/status 2>/dev/null)\n"
        "done\n"
        "visible=0; any=0\n"
        "for f in /proc/[0-9]*/environ; do\n"
        "  visible=$((visible+1))\n"
        f"  if {{ tr '\\0' '\\n' < \"$f\"; }} 2>/dev/null | grep -q -F {pattern}; then any=$((any+1)); fi\n"
        "done\n"
        "echo ancestors=$ancestors ancestor_hits=$hits visible=$visible visible_hits=$any"
    )


def probe_counts(output: str) -> dict[str, int]:
    line = next(line for line in output.splitlines() if line.startswith("ancestors="))
    return {key: int(value) for key, value in (item.split("=") for item in line.split())}


SECRET_NAME = "LOCALAGENT_TEST_SECRET_TOKEN"


@needs_landlock
@pytest.mark.parametrize("mode", ["workspace-write", "read-only", "off"])
def test_no_ancestor_or_other_process_shows_the_agents_secrets(tmp_path: Path, mode: str) -> None:
    by_name = "value-" + secrets.token_hex(12)
    by_shape = "ghp_" + secrets.token_hex(18)
    result = run_as_agent(
        tmp_path, mode, environ_probe(by_name, by_shape), {SECRET_NAME: by_name, "LOCALAGENT_TEST_NOTE": by_shape}
    )
    counts = probe_counts(result["output"])
    assert counts["ancestors"] >= 2, result["output"]  # the agent and the test runner at least
    assert counts["ancestor_hits"] == 0, result["output"]
    assert counts["visible_hits"] == 0, result["output"]
    assert by_name not in result["output"] and by_shape not in result["output"]
    assert result["metadata"]["process_isolation"] == "landlock"
    direct = run_as_agent(tmp_path, mode, "tr '\\0' '\\n' < /proc/$PPID/environ", {SECRET_NAME: by_name})
    assert by_name not in direct["output"]
    assert "Permission denied" in direct["output"]


@needs_pid_namespace
def test_without_landlock_a_pid_namespace_hides_every_other_process(tmp_path: Path) -> None:
    by_name = "value-" + secrets.token_hex(12)
    command = environ_probe(by_name) + "; echo ppid=$PPID; ls -d /proc/[0-9]* | wc -l | sed 's/^/procs=/'"
    result = run_as_agent(tmp_path, "workspace-write", command, {SECRET_NAME: by_name}, simulate="no-landlock")
    counts = probe_counts(result["output"])
    assert counts["ancestor_hits"] == 0 and counts["visible_hits"] == 0, result["output"]
    assert "ppid=0" in result["output"]  # the shell is the namespace's first process
    assert counts["visible"] <= 8, result["output"]  # only the shell and what it started
    assert result["metadata"]["process_isolation"] == "pid-namespace"
    assert result["metadata"]["sandboxed"] is False


@needs_pid_namespace
async def test_pid_namespace_keeps_exit_codes_and_timeouts_kill_the_whole_tree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sandbox, "landlock_support", lambda: NO_LANDLOCK)
    ctx = make_ctx(tmp_path)
    output, meta = await bash(ctx, "echo hi; exit 7")
    assert meta["exit_code"] == 7 and "hi" in output
    marker = unique_seconds()
    started = time.monotonic()
    output, meta = await bash(ctx, f"(trap '' TERM; setsid sleep {marker}) & sleep {marker}", timeout=0.5)
    assert meta["timed_out"] and time.monotonic() - started < 10
    assert await gone(marker), "a process of the namespace survived the timeout"


# --- Availability and reporting --------------------------------------------------------------


def test_default_policy_is_workspace_write_without_network(tmp_path: Path) -> None:
    ctx = ToolContext(workspace=tmp_path, scratch_dir=tmp_path / "scratch")
    assert ctx.sandbox == SandboxPolicy(mode="workspace-write", network=False)
    with pytest.raises(ValueError, match="unknown sandbox mode"):
        SandboxPolicy(mode="sometimes")  # type: ignore[arg-type]  # a wrong mode, on purpose


@needs_landlock
def test_available_here_and_silent_when_enforced() -> None:
    assert 1 <= ABI <= 64
    assert sandbox_available()
    assert sandbox_available(SandboxPolicy(mode="read-only")) == (ABI >= 4)
    assert sandbox_note(SandboxPolicy(mode="read-only", network=True)) is None
    assert "off" in (sandbox_note(SandboxPolicy(mode="off")) or "")


def test_missing_landlock_is_reported_not_hidden(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox, "landlock_support", lambda: NO_LANDLOCK)
    policy = SandboxPolicy(mode="read-only")
    assert not sandbox_available(policy)
    note = sandbox_note(policy)
    assert note is not None and "without a sandbox" in note and "simulated" in note
    assert "\n" not in note
    confinement = confine(policy, tmp_path, tmp_path / "scratch")
    assert confinement.sandboxed is False and confinement.preexec_fn is None


async def test_unsandboxed_runs_say_so_in_metadata(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox, "landlock_support", lambda: NO_LANDLOCK)
    monkeypatch.setattr(sandbox, "pid_namespace_prefix", lambda: None)
    output, meta = await bash(make_ctx(tmp_path, mode="read-only"), "echo ran")
    assert "ran" in output
    assert meta["sandboxed"] is False and meta["process_isolation"] == "none"


# --- Secret filter ---------------------------------------------------------------------------


SECRET_NAMES = [
    "OPENAI_API_KEY",
    "my_api_key",
    "AWS_SECRET_ACCESS_KEY",
    "FOO_TOKEN",
    "DB_PASSWORD",
    "MYSQL_PASSWD",
    "SMTP_PASS",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "AZURE_CREDENTIAL",
    "BASIC_AUTH",
    "GH_PAT",
    "GITHUB_PAT",
    "SESSION_COOKIE",
    "FLASK_SESSION",
    "RSA_PRIVATE",
    "NPM_AUTH",
    "NPM_AUTHTOKEN",
    "DOCKER_CREDENTIALS",
    "DATABASE_URL",
    "REDIS_URL",
    "SENTRY_DSN",
    "APIKEY",
    "awsSecretKey",
    "SSH_AUTH_SOCK",
    "MYSQL_PWD",
    "DB_PWD",
    "dbPwd",
    "LDAP_BIND_PW",
    "ldapBindPw",
    "SLACK_WEBHOOK_URL",
    "DISCORD_WEBHOOK",
    "TEAMS_WEBHOOKS",
]
# Each value under an innocent name; each must be caught by its shape alone.
SECRET_VALUES = {
    "openai": "sk-proj-" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6",
    "anthropic": "sk-ant-api03-" + "Zx9" * 12,
    "github": "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "github_oauth": "gho_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "github_user": "ghu_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "github_server": "ghs_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "github_fine": "github_pat_" + "11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
    "huggingface": "hf_" + "aBcDeFgHiJkLmNoPqRsTuVwXyZaBcDeFgH",
    "aws": "AKIA" + "IOSFODNN7EXAMPLE",
    "aws_session": "ASIA" + "IOSFODNN7EXAMPLE",
    "slack": "xoxb-" + "123456789012-1234567890123-AbCdEfGhIjKlMnOp",
    "gitlab": "glpat-" + "AbCdEfGhIjKlMnOpQrSt",
    "npm": "npm_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "jwt": "eyJhbGciOiJIUzI1NiJ9." + "eyJzdWIiOiIxMjM0NTY3ODkwIn0." + "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "pem": "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----",
    "url": "postgres://app:hunter2@db.internal:5432/app",
    "bearer": "Authorization: Bearer sk-" + "0123456789abcdefghijklmn",
    "github_in_url": "https://ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8" + "@github.com/o/r.git",
    "token_after_colon": "remote=origin:ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "token_in_list": "a,b,hf_" + "aBcDeFgHiJkLmNoPqRsTuVwXyZaBcDeFgH",
    "token_in_path": "/run/secrets/ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "url_token_user": "https://" + "0a1b2c3d4e5f60718293a4b5c6d7e8f901234567" + "@github.com/o/r.git",
    "url_user_pass": "https://x-access-token:" + "v1.abc" + "@github.com/o/r.git",
    "pypi": "pypi-AgEIcHlwaS5vcmc" + "CJGI0ZjYxNjMtNWQ5Ny00YzQ2LWI4NTUtNTgzNTE1ZTQ3YWYz",
    "testpypi": "pypi-AgENdGVzdC5weXBpLm9yZw" + "IkZmI0NzQ0ZDItZjA5ZC00YWQyLTkyYzAtZDkxOTQ4ZGY0",
    "docker": "dckr_pat_" + "AbCdEfGhIjKlMnOpQrStUvWxYz0",
    "stripe_test": "sk_test_" + "51HxYzAbCdEfGhIjKlMnOpQrSt",
    "stripe_live": "sk_live_" + "51HxYzAbCdEfGhIjKlMnOpQrSt",
    "stripe_restricted": "rk_live_" + "51HxYzAbCdEfGhIjKlMnOpQrSt",
    "stripe_webhook": "whsec_" + "AbCdEfGhIjKlMnOpQrStUvWx0123",
    "shopify": "shpat_" + "0123456789abcdef0123456789abcdef",
    "gitlab_in_url": "https://oauth2:glpat-" + "AbCdEfGhIjKlMnOpQrSt" + "@gitlab.com/o/r.git",
}
ORDINARY = {
    "PATH": "/usr/local/bin:/usr/bin:/bin:/opt/sk-tools-2024-release/bin",
    "HOME": "/home/user",
    "LANG": "en_US.UTF-8",
    "LC_ALL": "C.UTF-8",
    "TERM": "xterm-256color",
    "SHELL": "/bin/bash",
    "USER": "user",
    "PWD": "/home/user/project",
    "OLDPWD": "/home/user",
    "PYTHONPATH": "/home/user/lib",
    "LD_LIBRARY_PATH": "/usr/local/cuda/lib64",
    "MANPATH": "/usr/share/man",
    "TOKENIZERS_PARALLELISM": "false",
    "KEYTIMEOUT": "1",
    "XKB_KEYMAP": "us",
    "GIT_AUTHOR_NAME": "A. Person",
    "GIT_AUTHOR_EMAIL": "a@example.com",
    "GOPRIVATE": "example.com/*",
    "XDG_SESSION_TYPE": "wayland",
    "DESKTOP_SESSION": "gnome",
    "HTTP_PROXY": "http://proxy.internal:3128",
    "SERVICE_URL": "https://example.com/api",
    "CUDA_VISIBLE_DEVICES": "0",
    "EDITOR": "vim",
    "PIP_INDEX_URL": "https://pypi.org/simple",
    "GIT_SSH_COMMAND": "ssh -o IdentitiesOnly=yes",
    "SK_LEARN_HOME": "/data/sk-learn",
    "PW_TEST_HTML_REPORT_OPEN": "never",
    "PWDEBUG": "0",
    "PLAYWRIGHT_BROWSERS_PATH": "/home/user/.cache/ms-playwright",
    "GIT_REMOTE": "git@github.com:o/r.git",
    "REPO_URL": "ssh://git@github.com/o/r.git",
    "UPSTREAM": "https://alice@bitbucket.org/team/repo.git",
    "HTTPS_PROXY": "http://proxy.internal:3128/",
    "MODEL_DIR": "/models/hf_cache/bert-base",
    "BUILD_ID": "build_test_2024_06_01_nightly",
}


@pytest.mark.parametrize("name", SECRET_NAMES)
def test_secret_names_are_withheld(name: str) -> None:
    assert filtered_environment(set(), {name: "harmless-looking"}) == {}


@pytest.mark.parametrize("kind", sorted(SECRET_VALUES))
def test_secret_value_shapes_are_withheld_under_any_name(kind: str) -> None:
    assert filtered_environment(set(), {"BUILD_NOTE": SECRET_VALUES[kind]}) == {}


def test_ordinary_variables_pass_untouched() -> None:
    assert filtered_environment(set(), ORDINARY) == ORDINARY


SYSTEM_NAMES = (
    "PATH",
    "HOME",
    "LANG",
    "TERM",
    "LC_CTYPE",
    "LC_ALL",
    "PWD",
    "OLDPWD",
    "SHLVL",
    "USER",
    "LOGNAME",
    "SHELL",
    "TMPDIR",
    "HOSTNAME",
    "XDG_CONFIG_HOME",
)


@pytest.mark.parametrize("name", ["DBUS_SESSION_BUS_ADDRESS", "XDG_RUNTIME_DIR", "SSH_AUTH_SOCK", "DOCKER_HOST"])
def test_session_service_addresses_are_never_passed_even_when_allowed(name: str) -> None:
    source = {name: "unix:path=/run/user/1000/bus", "PATH": "/usr/bin"}
    assert filtered_environment(set(), source) == {"PATH": "/usr/bin"}
    assert filtered_environment({name}, source) == {"PATH": "/usr/bin"}


@pytest.mark.parametrize("kind", ["github", "github_in_url", "url_user_pass", "jwt"])
def test_system_names_pass_whatever_their_value_looks_like(kind: str) -> None:
    source = {name: SECRET_VALUES[kind] for name in SYSTEM_NAMES}
    assert filtered_environment(set(), source) == source
    assert not any(looks_secret(name, SECRET_VALUES[kind]) for name in SYSTEM_NAMES)


def test_allowed_names_pass_even_when_they_look_secret() -> None:
    jwt = SECRET_VALUES["jwt"]
    source = {"GH_PAT": "x", "BUILD_NOTE": jwt, "OPENAI_API_KEY": "y", "OTHER_NOTE": jwt}
    assert filtered_environment({"GH_PAT", "BUILD_NOTE"}, source) == {"GH_PAT": "x", "BUILD_NOTE": jwt}


async def test_bash_commands_never_see_filtered_variables(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GH_PAT", "pat-value-123")
    monkeypatch.setenv("BUILD_NOTE", SECRET_VALUES["huggingface"])
    monkeypatch.setenv("TOKENIZERS_PARALLELISM", "false")
    monkeypatch.setenv("SSH_AUTH_SOCK", "/tmp/agent.sock")
    monkeypatch.setenv("DEPLOY_TOKEN", "deploy-value-1")
    ctx = make_ctx(tmp_path)
    ctx.env_allow = {"SSH_AUTH_SOCK", "DEPLOY_TOKEN"}
    output, _ = await bash(ctx, "env")
    assert "pat-value-123" not in output
    assert SECRET_VALUES["huggingface"] not in output
    assert "TOKENIZERS_PARALLELISM=false" in output
    assert "DEPLOY_TOKEN=deploy-value-1" in output
    assert "SSH_AUTH_SOCK" not in output  # an agent socket signs with the person's keys: never passed
