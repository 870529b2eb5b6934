"""Landlock through its system calls: what the kernel supports, and the ruleset a policy asks for.

Called with ctypes rather than through the PyPI `landlock` package: that package is a
pre-release, would be one more dependency for about a hundred lines, and does not expose what is
needed here (every access right of ABI 1 to 7, network rules, scopes, and a ruleset built in the
parent and applied after fork). The ruleset is built here, in the parent (paths opened, rules
added); only `restrict_self` runs in the child (see tools.sandbox.child).
"""

from __future__ import annotations

import ctypes
import errno
import functools
import os
import platform
import stat
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tools.sandbox.libc import libc_handle
from tools.sandbox.policy import SandboxPolicy

# landlock_create_ruleset, landlock_add_rule, landlock_restrict_self; these architectures use
# the unified syscall table, where the numbers are the same.
_SYSCALL_NUMBERS = {"x86_64": (444, 445, 446), "aarch64": (444, 445, 446), "arm64": (444, 445, 446)}
_CREATE_RULESET_VERSION = 1 << 0
_RULE_PATH_BENEATH = 1

# Filesystem access rights, by the ABI that introduced them.
FS_EXECUTE = 1 << 0
FS_WRITE_FILE = 1 << 1
FS_READ_FILE = 1 << 2
FS_READ_DIR = 1 << 3
FS_REMOVE_DIR = 1 << 4
FS_REMOVE_FILE = 1 << 5
FS_MAKE_CHAR = 1 << 6
FS_MAKE_DIR = 1 << 7
FS_MAKE_REG = 1 << 8
FS_MAKE_SOCK = 1 << 9
FS_MAKE_FIFO = 1 << 10
FS_MAKE_BLOCK = 1 << 11
FS_MAKE_SYM = 1 << 12
FS_REFER = 1 << 13  # ABI 2
FS_TRUNCATE = 1 << 14  # ABI 3
FS_IOCTL_DEV = 1 << 15  # ABI 5
NET_BIND_TCP = 1 << 0  # ABI 4
NET_CONNECT_TCP = 1 << 1  # ABI 4
SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0  # ABI 6
SCOPE_SIGNAL = 1 << 1  # ABI 6

# Rights that make sense on a file (not a directory); a rule on a file with others is EINVAL.
_FILE_RIGHTS = FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_TRUNCATE | FS_IOCTL_DEV
_READ_RIGHTS = FS_EXECUTE | FS_READ_FILE | FS_READ_DIR
# Device nodes are never created in a writable root: a root-owned command could otherwise make
# a node for a raw disk in /tmp and write through it.
_WRITE_RIGHTS_EXCLUDED = FS_MAKE_CHAR | FS_MAKE_BLOCK

# Devices a shell needs even when nothing may be written: `> /dev/null`, `head -c 8 /dev/urandom`.
_SHELL_DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")
# /dev/tty is opened for writing by some programs; no ioctls on it, so nothing can be typed into
# a terminal (commands run in their own session, without one, anyway).
_TTY_DEVICE = "/dev/tty"
# GPUs (CUDA, ROCm, DRM) open their devices read-write and drive them with ioctls, and so do
# pseudo-terminals (pexpect, script); allowed when the workspace is writable.
GPU_DEVICES = (
    "/dev/nvidiactl",
    "/dev/nvidia-uvm",
    "/dev/nvidia-uvm-tools",
    "/dev/nvidia-modeset",
    "/dev/nvidia-caps",
    "/dev/dri",
    "/dev/kfd",
)
_WORKSPACE_DEVICES = (*GPU_DEVICES, "/dev/ptmx", "/dev/pts")
_TEMP_DIRS = ("/tmp", "/var/tmp", "/dev/shm")


@dataclass(frozen=True)
class LandlockSupport:
    abi: int
    reason: str = ""  # why Landlock cannot be used; empty when it can

    @property
    def available(self) -> bool:
        return self.abi > 0


class _RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def syscall_numbers() -> tuple[int, int, int] | None:
    return _SYSCALL_NUMBERS.get(platform.machine().lower())


@functools.cache
def landlock_support() -> LandlockSupport:
    """The Landlock ABI of the running kernel, or 0 and the reason it cannot be used."""
    if sys.platform != "linux":
        return LandlockSupport(0, f"Landlock is Linux-only (this is {sys.platform})")
    numbers = syscall_numbers()
    if numbers is None:
        return LandlockSupport(0, f"Landlock system call numbers are not known for {platform.machine()}")
    result = libc_handle().syscall(
        ctypes.c_long(numbers[0]), None, ctypes.c_long(0), ctypes.c_long(_CREATE_RULESET_VERSION)
    )
    if result > 0:
        return LandlockSupport(int(result))
    err = ctypes.get_errno()
    release = platform.release()
    if err == errno.ENOSYS:
        reason = f"the kernel ({release}) or a seccomp filter does not offer Landlock (Linux 5.13+ has it)"
    elif err == errno.EOPNOTSUPP:
        reason = "Landlock is built into the kernel but disabled at boot (add landlock to the lsm= kernel parameter)"
    elif err == errno.EPERM:
        reason = "Landlock system calls are blocked by a seccomp filter"
    else:
        reason = f"Landlock could not be queried: {os.strerror(err)}"
    return LandlockSupport(0, reason)


def landlock_abi() -> int:
    """The Landlock ABI version (1..7 today), or 0 where Landlock cannot be used."""
    return landlock_support().abi


def fs_rights(abi: int) -> int:
    """Every filesystem right this ABI knows, so each one is handled (denied unless granted)."""
    if abi <= 0:
        return 0
    rights = (1 << 13) - 1
    if abi >= 2:
        rights |= FS_REFER
    if abi >= 3:
        rights |= FS_TRUNCATE
    if abi >= 5:
        rights |= FS_IOCTL_DEV
    return rights


def _ruleset_attr_size(abi: int) -> int:
    # Older kernels know a shorter struct; pass exactly the part they know.
    return 8 if abi < 4 else 16 if abi < 6 else 24


def _raise_errno(what: str) -> None:
    err = ctypes.get_errno()
    raise OSError(err, f"{what}: {os.strerror(err)}")


def _create_ruleset(abi: int, fs: int, net: int, scoped: int) -> int:
    numbers = syscall_numbers()
    assert numbers is not None
    attr = _RulesetAttr(fs, net, scoped)
    fd = libc_handle().syscall(
        ctypes.c_long(numbers[0]), ctypes.byref(attr), ctypes.c_long(_ruleset_attr_size(abi)), ctypes.c_long(0)
    )
    if fd < 0:
        _raise_errno("landlock_create_ruleset")
    return int(fd)


def _add_path_rule(ruleset_fd: int, path: str, access: int, handled: int) -> None:
    """Grant `access` beneath `path`; a path that does not exist is skipped."""
    try:
        path_fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return
    try:
        if not stat.S_ISDIR(os.fstat(path_fd).st_mode):
            access &= _FILE_RIGHTS
        access &= handled
        if not access:
            return
        numbers = syscall_numbers()
        assert numbers is not None
        attr = _PathBeneathAttr(access, path_fd)
        added = libc_handle().syscall(
            ctypes.c_long(numbers[1]),
            ctypes.c_long(ruleset_fd),
            ctypes.c_long(_RULE_PATH_BENEATH),
            ctypes.byref(attr),
            ctypes.c_long(0),
        )
        if added != 0:
            _raise_errno(f"landlock_add_rule({path})")
    finally:
        os.close(path_fd)


def writable_roots(policy: SandboxPolicy, workspace: Path, scratch_dir: Path) -> list[str]:
    """Directories a workspace-write command may change; empty for the other modes."""
    if policy.mode != "workspace-write":
        return []
    roots = [str(workspace), str(scratch_dir), *_TEMP_DIRS]
    tmpdir = os.environ.get("TMPDIR")
    if tmpdir:
        roots.append(tmpdir)
    roots.extend(str(p) for p in policy.writable)
    return roots


def _workspace_devices() -> Iterator[str]:
    yield from _WORKSPACE_DEVICES
    yield from gpu_nodes()


def gpu_nodes() -> Iterator[str]:
    """/dev/nvidia0, /dev/nvidia1, ...: one node per GPU."""
    try:
        names = os.listdir("/dev")
    except OSError:
        return
    yield from (f"/dev/{name}" for name in names if name.startswith("nvidia") and name[6:].isdigit())


def _scopes(abi: int) -> int:
    if abi < 6:
        return 0
    # Abstract unix sockets reach processes outside the sandbox (an X server takes keystrokes).
    # Signals reach only the command's own processes, in every mode: `kill -STOP $PPID` would
    # freeze the agent, and `kill` any other process of the person's.
    return SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL


def build_ruleset(policy: SandboxPolicy, workspace: Path, scratch_dir: Path, abi: int) -> int:
    if policy.mode == "off":
        # A domain that restricts as little as possible, for the process boundary alone: a scope
        # (ABI 6) leaves mounts working; before that, denying only block-device creation does.
        if abi >= 6:
            return _create_ruleset(abi, 0, 0, _scopes(abi))
        return _create_ruleset(abi, FS_MAKE_BLOCK, 0, 0)

    handled = fs_rights(abi)
    net = 0 if policy.network or abi < 4 else NET_BIND_TCP | NET_CONNECT_TCP
    fd = _create_ruleset(abi, handled, net, _scopes(abi))
    try:
        _add_path_rule(fd, "/", _READ_RIGHTS, handled)
        device_rights = FS_READ_FILE | FS_WRITE_FILE | FS_TRUNCATE
        for device in _SHELL_DEVICES:
            _add_path_rule(fd, device, device_rights | FS_IOCTL_DEV, handled)
        _add_path_rule(fd, _TTY_DEVICE, device_rights, handled)
        if policy.mode == "workspace-write":
            for device in _workspace_devices():
                _add_path_rule(fd, device, _READ_RIGHTS | device_rights | FS_IOCTL_DEV, handled)
            for root in writable_roots(policy, workspace, scratch_dir):
                _add_path_rule(fd, root, handled & ~_WRITE_RIGHTS_EXCLUDED, handled)
    except BaseException:
        os.close(fd)
        raise
    return fd
