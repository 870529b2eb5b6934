"""The namespace layer: bubblewrap (`bwrap`) runs each command in its own mount, PID and network
namespaces, where the machine allows them.

What a command sees there: the root read-only; the workspace, the temp folders and the session's
scratch folder writable (workspace-write) or nothing writable (read-only); the protected paths of
the workspace read-only; a private /dev and /proc with only its own processes (so it can signal,
ptrace or read the environment of nothing else); no network at all when the network is off (its
own namespace holds only a loopback of its own, and the seccomp filter refuses socket()); the
person's runtime folder (/run/user/UID: the session bus, agents' sockets), docker's socket, the
system bus, secret folders of the home (~/.ssh, ~/.aws, ...) and localagent's own data replaced by
empty ones. Background jobs end with the command, as they do in any PID namespace.

bwrap is looked up in the absolute entries of PATH only (a repository's ./bwrap is never run),
and probed once: a kernel or an AppArmor policy may refuse unprivileged user namespaces, and then
Landlock is the layer. `LOCALAGENT_SANDBOX_LAYER=landlock` chooses Landlock whatever is here.
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from tools.program_path import which_absolute
from tools.sandbox.landlock import GPU_DEVICES, gpu_nodes
from tools.sandbox.policy import SandboxPolicy
from tools.sandbox.protected import existing_protected

LAYER_VARIABLE = "LOCALAGENT_SANDBOX_LAYER"
_PROBE_SECONDS = 5.0
# Home folders and files holding credentials: replaced by empty ones.
SECRET_HOME_DIRS = (
    ".ssh",
    ".aws",
    ".gnupg",
    ".config/gh",
    ".docker",
    ".kube",
    ".azure",
    ".config/gcloud",
    ".password-store",
    ".local/share/keyrings",
    ".config/op",
    ".config/hub",
    ".terraform.d",
    ".config/rclone",
    ".vault",
    ".config/netlify",
    ".fly",
)
SECRET_HOME_FILES = (
    ".netrc",
    ".git-credentials",
    ".pypirc",
    ".npmrc",
    ".pgpass",
    ".vault-token",
    ".claude/.credentials.json",
    ".claude.json",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".gem/credentials",
    ".bash_history",
    ".zsh_history",
    ".python_history",
    ".psql_history",
    ".mysql_history",
    ".lesshst",
    ".config/git/credentials",
)
# Sockets that run anything outside the sandbox for whoever connects.
_SERVICE_SOCKETS = (
    "/run/docker.sock",
    "/var/run/docker.sock",
    "/run/dbus/system_bus_socket",
    "/var/run/dbus/system_bus_socket",
    "/run/containerd/containerd.sock",
    "/run/podman/podman.sock",
)
_TEMP_DIRS = ("/tmp", "/var/tmp")


@functools.cache
def bubblewrap_status() -> tuple[str | None, str]:
    """(the bwrap program, "") where it works here, else (None, why not)."""
    if sys.platform != "linux":
        return None, f"bubblewrap is Linux-only (this is {sys.platform})"
    if os.environ.get(LAYER_VARIABLE, "").strip().lower() == "landlock":
        return None, f"{LAYER_VARIABLE}=landlock"
    program = which_absolute("bwrap")
    if program is None:
        return (
            None,
            "bwrap is not installed (Debian and Ubuntu: apt install bubblewrap; Fedora: dnf install bubblewrap)",
        )
    probe = [
        program,
        "--die-with-parent",
        "--unshare-pid",
        "--unshare-net",
        "--unshare-ipc",
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "true",
    ]
    try:
        done = subprocess.run(probe, stdin=subprocess.DEVNULL, capture_output=True, timeout=_PROBE_SECONDS, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        return None, f"bwrap could not be started: {exc}"
    if done.returncode != 0:
        said = done.stderr.decode(errors="replace").strip().splitlines()
        reason = said[-1] if said else f"exit code {done.returncode}"
        return None, f"bwrap cannot make namespaces here ({reason}); unprivileged user namespaces are refused"
    return program, ""


def bubblewrap_argv(
    program: str, policy: SandboxPolicy, workspace: Path, scratch_dir: Path, seccomp_fd: int | None
) -> list[str]:
    """The bwrap command line that runs one command (append `bash -c ...`)."""
    writable = policy.mode == "workspace-write"
    argv = [program, "--die-with-parent", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
    if os.geteuid() == 0:
        # Run as root, bwrap keeps every capability for the command: it could remount / read-write
        # or unmount what hides a folder. A sandboxed command keeps none.
        argv += ["--cap-drop", "ALL"]
    if not policy.network:
        argv.append("--unshare-net")
    argv += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    bind = "--bind" if writable else "--ro-bind"
    if os.path.isdir("/dev/shm"):
        argv += [bind, "/dev/shm", "/dev/shm"]
    if writable:
        for device in _gpu_devices():
            argv += ["--dev-bind-try", device, device]
    roots = [workspace, *(Path(p) for p in _TEMP_DIRS), *policy.writable]
    if os.environ.get("TMPDIR"):
        roots.append(Path(os.environ["TMPDIR"]))
    for root in roots:
        if root.is_dir():
            argv += [bind, str(root), str(root)]
    # After the writable roots, so a secret folder under one of them (a home in /tmp) stays hidden.
    argv += list(_hidden(policy, workspace))
    if scratch_dir.is_dir():
        # The scratch folder lies in localagent's data, hidden above: the saved full outputs of
        # earlier commands stay readable (and writable in workspace-write, as under Landlock).
        argv += [bind, str(scratch_dir), str(scratch_dir)]
    git_dir = workspace / ".git"
    if writable and git_dir.is_dir() and not git_dir.is_symlink():
        # A mount point cannot be renamed or removed: `.git` stays the folder it is (a command
        # could otherwise move it aside and put a gitfile naming its own config there).
        argv += ["--bind", str(git_dir), str(git_dir)]
    for path in existing_protected(workspace):
        argv += ["--ro-bind", str(path), str(path)]
    if seccomp_fd is not None:
        argv += ["--seccomp", str(seccomp_fd)]
    argv += ["--chdir", str(workspace), "--"]
    return argv


def _gpu_devices() -> Iterator[str]:
    yield from (device for device in GPU_DEVICES if os.path.exists(device))
    yield from gpu_nodes()


def _hidden(policy: SandboxPolicy, workspace: Path) -> Iterator[str]:
    runtime = Path(f"/run/user/{os.getuid()}")
    if runtime.is_dir():
        yield from ("--tmpfs", str(runtime))
    for socket_path in _SERVICE_SOCKETS:
        if os.path.exists(socket_path) and not os.path.islink(socket_path):
            yield from ("--ro-bind", os.devnull, socket_path)
    home = Path.home()
    folders = [home / name for name in SECRET_HOME_DIRS] + list(policy.hidden)
    for folder in folders:
        # A symlinked one is hidden where it leads (and the link too, by the same mount).
        real = Path(os.path.realpath(folder))
        # Never one that holds the workspace: the person chose to work there.
        if real.is_dir() and not workspace.is_relative_to(real) and real != Path("/"):
            yield from ("--tmpfs", str(real))
    for name in SECRET_HOME_FILES:
        real = Path(os.path.realpath(home / name))
        if real.is_file() and not real.is_relative_to(workspace):
            yield from ("--ro-bind", os.devnull, str(real))
