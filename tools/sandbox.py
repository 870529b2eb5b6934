"""An OS sandbox for the commands the model runs: Landlock, with a PID namespace as fallback.

Landlock is called through its three system calls with ctypes rather than through the PyPI
`landlock` package: that package is a pre-release, would be one more dependency for about a
hundred lines, and does not expose what is needed here (every access right of ABI 1 to 7,
network rules, scopes, and a ruleset built in the parent and applied after fork).

The ruleset is built in the parent (paths opened, rules added) and only `restrict_self` runs in
the child, between fork and exec, so the child allocates next to nothing there.

A Landlock domain is also the boundary that keeps a command out of other processes: a sandboxed
process may not ptrace, and so may not read /proc/PID/environ or /proc/PID/mem of, any process
outside its domain (the agent, its ancestors, earlier commands). That is why even mode `off` puts
the command in a minimal domain. CAP_SYS_ADMIN or CAP_PERFMON lift that check, so a root-owned
command loses them first. Where Landlock is missing the command runs in its own user, PID and
mount namespace with its own /proc instead, so no other process is visible at all. A PID
namespace is not used on top of Landlock: `$!` would name PIDs nobody outside can use, and a
server left running in the background would die with the command's shell.

With the network off, Landlock's TCP rules leave out Multipath TCP (IPPROTO_MPTCP), which falls
back to plain TCP and so reaches any TCP listener. A seccomp filter closes that: socket() with that
protocol fails, and so does io_uring_setup, since IORING_OP_SOCKET creates sockets where seccomp
cannot see the protocol. Where no seccomp filter can be installed the network is reported open.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import os
import platform
import shutil
import stat
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

SandboxMode = Literal["read-only", "workspace-write", "off"]
Isolation = Literal["landlock", "pid-namespace", "none"]
SANDBOX_MODES: tuple[SandboxMode, ...] = ("read-only", "workspace-write", "off")

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
# GPUs (CUDA, ROCm, DRM) and pseudo-terminals (pexpect, script) open their devices read-write
# and drive them with ioctls; allowed when the workspace is writable.
_WORKSPACE_DEVICES = ("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset",
                      "/dev/nvidia-caps", "/dev/dri", "/dev/kfd", "/dev/ptmx", "/dev/pts")
_TEMP_DIRS = ("/tmp", "/var/tmp", "/dev/shm")

_PR_CAPBSET_DROP = 24
_PR_SET_NO_NEW_PRIVS = 38
_PR_CAP_AMBIENT = 47
_PR_CAP_AMBIENT_CLEAR_ALL = 4
_CAP_SETPCAP = 8
# What a root-owned command keeps inside the sandbox: Docker's default set minus MKNOD, NET_RAW,
# SETPCAP and SETFCAP, i.e. CHOWN DAC_OVERRIDE FOWNER FSETID KILL SETGID SETUID NET_BIND_SERVICE
# SYS_CHROOT AUDIT_WRITE. CAP_SYS_ADMIN and CAP_PERFMON in particular let a process read /proc/PID
# of processes outside its Landlock domain, and CAP_SYS_MODULE or CAP_SYS_RAWIO leave it entirely.
_KEPT_CAPABILITIES = frozenset({0, 1, 3, 4, 5, 6, 7, 10, 18, 29})
# With the sandbox off a root-owned command keeps its power except what crosses the process
# boundary: SYS_PTRACE, SYS_ADMIN, PERFMON.
_BOUNDARY_CAPABILITIES = (19, 21, 38)

_NAMESPACE_PROBE_SECONDS = 5.0

_PR_SET_SECCOMP = 22
_SECCOMP_MODE_FILTER = 2
_SECCOMP_RET_ALLOW = 0x7FFF0000
_SECCOMP_RET_ERRNO = 0x00050000
_IPPROTO_MPTCP = 262
_SYS_SOCKET = 1  # socketcall's first argument when it stands for socket()
_X32_SYSCALL_BIT = 0x40000000
_AUDIT_ARCH_X86_64 = 0xC000003E
_AUDIT_ARCH_I386 = 0x40000003
_AUDIT_ARCH_AARCH64 = 0xC00000B7
_AUDIT_ARCH_ARM = 0x40000028
# Classic BPF opcodes a seccomp filter is written in.
_BPF_LD_W_ABS = 0x20
_BPF_ALU_AND_K = 0x54
_BPF_JEQ_K = 0x15
_BPF_RET_K = 0x06
# struct seccomp_data: int nr, u32 arch, u64 instruction_pointer, u64 args[6].
_DATA_NR = 0
_DATA_ARCH = 4
_DATA_ARGS = 16


@dataclass(frozen=True)
class SandboxPolicy:
    """What a command may touch. `writable` adds roots to workspace-write (e.g. a build cache)."""

    mode: SandboxMode = "workspace-write"
    network: bool = False
    writable: tuple[Path, ...] = ()

    def __post_init__(self) -> None:
        if self.mode not in SANDBOX_MODES:
            raise ValueError(f"unknown sandbox mode {self.mode!r} (use {', '.join(SANDBOX_MODES)})")
        object.__setattr__(self, "writable", tuple(Path(p) for p in self.writable))


@dataclass(frozen=True)
class LandlockSupport:
    abi: int
    reason: str = ""  # why Landlock cannot be used; empty when it can

    @property
    def available(self) -> bool:
        return self.abi > 0


@dataclass
class Confinement:
    """How to start one command: argv prefix, a preexec_fn, and what is in force."""

    policy: SandboxPolicy
    isolation: Isolation
    sandboxed: bool  # the policy's filesystem rules are enforced
    network_blocked: bool
    prefix: tuple[str, ...] = ()
    preexec_fn: Callable[[], None] | None = None
    _ruleset_fd: int | None = field(default=None, repr=False)

    def argv(self, command: Sequence[str]) -> list[str]:
        return [*self.prefix, *command]

    def close(self) -> None:
        """Close the parent's ruleset fd; call once the child has been started."""
        if self._ruleset_fd is not None:
            os.close(self._ruleset_fd)
            self._ruleset_fd = None

    def metadata(self) -> dict[str, object]:
        return {
            "sandboxed": self.sandboxed,
            "sandbox_mode": self.policy.mode,
            "network_blocked": self.network_blocked,
            "process_isolation": self.isolation,
        }


# --- Landlock system calls -------------------------------------------------------------------


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


@functools.cache
def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    libc.prctl.restype = ctypes.c_int
    return libc


def _syscall_numbers() -> tuple[int, int, int] | None:
    return _SYSCALL_NUMBERS.get(platform.machine().lower())


@functools.cache
def landlock_support() -> LandlockSupport:
    """The Landlock ABI of the running kernel, or 0 and the reason it cannot be used."""
    if sys.platform != "linux":
        return LandlockSupport(0, f"Landlock is Linux-only (this is {sys.platform})")
    numbers = _syscall_numbers()
    if numbers is None:
        return LandlockSupport(0, f"Landlock system call numbers are not known for {platform.machine()}")
    result = _libc().syscall(ctypes.c_long(numbers[0]), None, ctypes.c_long(0),
                             ctypes.c_long(_CREATE_RULESET_VERSION))
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
    numbers = _syscall_numbers()
    assert numbers is not None
    attr = _RulesetAttr(fs, net, scoped)
    fd = _libc().syscall(ctypes.c_long(numbers[0]), ctypes.byref(attr), ctypes.c_long(_ruleset_attr_size(abi)),
                         ctypes.c_long(0))
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
        numbers = _syscall_numbers()
        assert numbers is not None
        attr = _PathBeneathAttr(access, path_fd)
        if _libc().syscall(ctypes.c_long(numbers[1]), ctypes.c_long(ruleset_fd), ctypes.c_long(_RULE_PATH_BENEATH),
                           ctypes.byref(attr), ctypes.c_long(0)) != 0:
            _raise_errno(f"landlock_add_rule({path})")
    finally:
        os.close(path_fd)


# --- What a policy allows --------------------------------------------------------------------


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
    try:
        # /dev/nvidia0, /dev/nvidia1, ...: one node per GPU.
        names = os.listdir("/dev")
    except OSError:
        return
    yield from (f"/dev/{name}" for name in names if name.startswith("nvidia") and name[6:].isdigit())


def _scopes(policy: SandboxPolicy, abi: int) -> int:
    if abi < 6:
        return 0
    # Abstract unix sockets reach processes outside the sandbox (an X server takes keystrokes).
    scoped = SCOPE_ABSTRACT_UNIX_SOCKET
    if policy.mode == "read-only":
        # Changing nothing includes not signalling other processes. Not in workspace-write, where a
        # command must be able to stop a server that an earlier command left running.
        scoped |= SCOPE_SIGNAL
    return scoped


def _build_ruleset(policy: SandboxPolicy, workspace: Path, scratch_dir: Path, abi: int) -> int:
    if policy.mode == "off":
        # A domain that restricts as little as possible, for the process boundary alone: a scope
        # (ABI 6) leaves mounts working; before that, denying only block-device creation does.
        if abi >= 6:
            return _create_ruleset(abi, 0, 0, SCOPE_ABSTRACT_UNIX_SOCKET)
        return _create_ruleset(abi, FS_MAKE_BLOCK, 0, 0)

    handled = fs_rights(abi)
    net = 0 if policy.network or abi < 4 else NET_BIND_TCP | NET_CONNECT_TCP
    fd = _create_ruleset(abi, handled, net, _scopes(policy, abi))
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


def _capability_mask(field_name: str) -> int:
    """A capability set of this process from /proc/self/status (CapEff, CapBnd, ...)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field_name + ":"):
                return int(line.split()[1], 16)
    except (OSError, ValueError):
        pass
    return 0


def _capabilities_to_drop(policy: SandboxPolicy) -> tuple[int, ...]:
    """Bounding-set entries to drop; only a root-owned command regains capabilities on exec."""
    if os.geteuid() != 0:
        return ()
    bounding = _capability_mask("CapBnd")
    wanted = _BOUNDARY_CAPABILITIES if policy.mode == "off" else range(64)
    drop = tuple(cap for cap in wanted if cap not in _KEPT_CAPABILITIES and bounding >> cap & 1)
    if drop and not _capability_mask("CapEff") >> _CAP_SETPCAP & 1:
        raise OSError(errno.EPERM, "root without CAP_SETPCAP cannot drop the capabilities that would lift the sandbox")
    return drop


# --- Seccomp filter for what Landlock's TCP rules miss --------------------------------------


@dataclass(frozen=True)
class _Denial:
    """One system call refused with `errno`; with `arg`, only when that argument equals `value`."""

    nr: int
    errno: int
    arg: int | None = None
    value: int = 0


@dataclass(frozen=True)
class _ArchRules:
    audit_arch: int
    denials: tuple[_Denial, ...]
    nr_mask: int = 0xFFFFFFFF


def _network_denials(socket_nr: int) -> tuple[_Denial, ...]:
    # EPROTONOSUPPORT is what a kernel without MPTCP says, so programs that try MPTCP first fall
    # back to TCP, which Landlock then decides on. ENOSYS makes io_uring users fall back to
    # plain system calls; both numbers below are the same in every table (unified numbering).
    return (_Denial(socket_nr, errno.EPROTONOSUPPORT, arg=2, value=_IPPROTO_MPTCP),
            _Denial(425, errno.ENOSYS))  # io_uring_setup


# Every system call table a process of this machine can reach. A 64-bit x86 process can also make
# i386 calls (int 0x80) and x32 calls (the x32 bit in the number), so those are covered too.
_NETWORK_RULES: dict[str, tuple[_ArchRules, ...]] = {
    "x86_64": (
        _ArchRules(_AUDIT_ARCH_X86_64, _network_denials(41), nr_mask=~_X32_SYSCALL_BIT & 0xFFFFFFFF),
        # i386 socketcall hides socket()'s protocol in memory a filter cannot read, so with the
        # network off it creates no sockets at all: only 32-bit programs notice.
        _ArchRules(_AUDIT_ARCH_I386, (*_network_denials(359), _Denial(102, errno.EACCES, arg=0, value=_SYS_SOCKET))),
    ),
    "aarch64": (
        _ArchRules(_AUDIT_ARCH_AARCH64, _network_denials(198)),
        _ArchRules(_AUDIT_ARCH_ARM, _network_denials(281)),  # AArch32 EABI has no socketcall
    ),
}
_NETWORK_RULES["arm64"] = _NETWORK_RULES["aarch64"]

_Insn = tuple[int, int | str, int | str, int]  # code, jt, jf, k; a str jump names a label


class _SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_SockFilter))]


@dataclass(frozen=True)
class _SeccompProgram:
    """A filter ready for prctl; holds the instruction array so the pointer stays valid."""

    instructions: ctypes.Array[_SockFilter]
    fprog: _SockFprog


def _ret(value: int) -> _Insn:
    return (_BPF_RET_K, 0, 0, value)


def _arg_low_word(index: int) -> int:
    # The low 32 bits come first on these little-endian machines, and an int argument such as
    # socket()'s protocol is only those: the kernel ignores whatever a caller puts above them.
    return _DATA_ARGS + 8 * index


def _arch_block(index: int, rules: _ArchRules) -> list[_Insn | str]:
    allow = f"allow{index}"
    block: list[_Insn | str] = [f"arch{index}", (_BPF_LD_W_ABS, 0, 0, _DATA_NR)]
    if rules.nr_mask != 0xFFFFFFFF:
        block.append((_BPF_ALU_AND_K, 0, 0, rules.nr_mask))
    for number, denial in enumerate(rules.denials):
        skip = f"arch{index}.{number}"
        block.append((_BPF_JEQ_K, 0, skip, denial.nr))
        if denial.arg is not None:
            # The number matched, so no other denial applies: a different argument is allowed.
            block += [(_BPF_LD_W_ABS, 0, 0, _arg_low_word(denial.arg)), (_BPF_JEQ_K, 0, allow, denial.value)]
        block += [_ret(_SECCOMP_RET_ERRNO | denial.errno), skip]
    block += [allow, _ret(_SECCOMP_RET_ALLOW)]
    return block


def _filter_source(arches: Sequence[_ArchRules]) -> list[_Insn | str]:
    source: list[_Insn | str] = [(_BPF_LD_W_ABS, 0, 0, _DATA_ARCH)]
    source += [(_BPF_JEQ_K, f"arch{i}", 0, rules.audit_arch) for i, rules in enumerate(arches)]
    # A table this filter does not know is refused whole rather than let through unchecked.
    source.append(_ret(_SECCOMP_RET_ERRNO | errno.ENOSYS))
    for i, rules in enumerate(arches):
        source += _arch_block(i, rules)
    return source


def _assemble(source: Sequence[_Insn | str]) -> list[tuple[int, int, int, int]]:
    """Resolve label jumps to the forward offsets classic BPF takes."""
    labels: dict[str, int] = {}
    insns: list[_Insn] = []
    for item in source:
        if isinstance(item, str):
            labels[item] = len(insns)
        else:
            insns.append(item)

    def offset(target: int | str, at: int) -> int:
        return target if isinstance(target, int) else labels[target] - at - 1

    return [(code, offset(jt, at), offset(jf, at), k) for at, (code, jt, jf, k) in enumerate(insns)]


@functools.cache
def _network_filter() -> _SeccompProgram:
    arches = _NETWORK_RULES[platform.machine().lower()]
    insns = _assemble(_filter_source(arches))
    array = (_SockFilter * len(insns))(*(_SockFilter(*insn) for insn in insns))
    return _SeccompProgram(array, _SockFprog(len(insns), ctypes.cast(array, ctypes.POINTER(_SockFilter))))


@functools.cache
def seccomp_reason() -> str:
    """Why the network filter cannot be installed here; empty when it can."""
    if sys.platform != "linux" or platform.machine().lower() not in _NETWORK_RULES:
        return f"no seccomp filter is known for {sys.platform} on {platform.machine()}"
    # A NULL program installs nothing: EFAULT says filter mode is there and the pointer was read.
    if _libc().prctl(ctypes.c_int(_PR_SET_SECCOMP), ctypes.c_ulong(_SECCOMP_MODE_FILTER), None,
                     ctypes.c_ulong(0), ctypes.c_ulong(0)) == 0:
        return "seccomp answered a probe that must fail"
    err = ctypes.get_errno()
    if err == errno.EFAULT:
        return ""
    if err == errno.EINVAL:
        return "the kernel has no seccomp filters (CONFIG_SECCOMP_FILTER)"
    return f"seccomp filters are refused: {os.strerror(err)}"


def _landlock_preexec(ruleset_fd: int, drop: tuple[int, ...],
                      seccomp: _SeccompProgram | None = None) -> Callable[[], None]:
    """The child's part, run between fork and exec: only prctl and restrict_self.

    Every argument is a ready ctypes object, so nothing is built in the child but the call.
    """
    libc = _libc()
    prctl, syscall = libc.prctl, libc.syscall
    zero = ctypes.c_ulong(0)
    drops = tuple((ctypes.c_int(_PR_CAPBSET_DROP), ctypes.c_ulong(cap)) for cap in drop)
    ambient = (ctypes.c_int(_PR_CAP_AMBIENT), ctypes.c_ulong(_PR_CAP_AMBIENT_CLEAR_ALL))
    no_new_privs = (ctypes.c_int(_PR_SET_NO_NEW_PRIVS), ctypes.c_ulong(1))
    numbers = _syscall_numbers()
    assert numbers is not None
    restrict = (ctypes.c_long(numbers[2]), ctypes.c_long(ruleset_fd), ctypes.c_long(0))
    set_seccomp = (ctypes.c_int(_PR_SET_SECCOMP), ctypes.c_ulong(_SECCOMP_MODE_FILTER))
    fprog = None if seccomp is None else ctypes.c_void_p(ctypes.addressof(seccomp.fprog))

    def preexec() -> None:
        for option, cap in drops:
            if prctl(option, cap, zero, zero, zero) != 0:
                raise OSError(ctypes.get_errno(), "dropping a capability failed")
        # Ambient capabilities would survive exec for a non-root user; kernels before 4.3 lack them.
        prctl(ambient[0], ambient[1], zero, zero, zero)
        # Needed by restrict_self without CAP_SYS_ADMIN; also stops setuid programs lifting the sandbox.
        if prctl(no_new_privs[0], no_new_privs[1], zero, zero, zero) != 0:
            raise OSError(ctypes.get_errno(), "PR_SET_NO_NEW_PRIVS failed")
        if syscall(*restrict) != 0:
            raise OSError(ctypes.get_errno(), "landlock_restrict_self failed")
        # After no_new_privs, which an unprivileged filter needs; the program stays alive with
        # `seccomp`, which this closure holds.
        if fprog is not None and prctl(set_seccomp[0], set_seccomp[1], fprog, zero, zero) != 0:
            raise OSError(ctypes.get_errno(), "installing the seccomp network filter failed")

    return preexec


# --- PID namespace fallback ------------------------------------------------------------------


@functools.cache
def pid_namespace_prefix() -> tuple[str, ...] | None:
    """`unshare` argv that gives a command its own user, PID and mount namespace and /proc.

    None where util-linux unshare is missing or the kernel refuses unprivileged namespaces.
    `--kill-child` makes the namespace die with unshare, so killing the process group is enough.
    """
    unshare = shutil.which("unshare")
    if unshare is None or sys.platform != "linux":
        return None
    prefix = (unshare, "--user", "--map-current-user", "--pid", "--fork", "--mount-proc", "--kill-child", "--")
    try:
        probe = subprocess.run([*prefix, "true"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, timeout=_NAMESPACE_PROBE_SECONDS, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return prefix if probe.returncode == 0 else None


# --- Public entry points ---------------------------------------------------------------------


def sandbox_available(policy: SandboxPolicy | None = None) -> bool:
    """Whether the sandbox is enforced: Landlock works, and with `policy`, all it asks for."""
    support = landlock_support()
    if not support.available:
        return policy is not None and policy.mode == "off"
    if policy is not None and _blocks_network(policy):
        return support.abi >= 4 and not seccomp_reason()
    return True


def _blocks_network(policy: SandboxPolicy) -> bool:
    return policy.mode != "off" and not policy.network


def process_isolation() -> Isolation:
    """What keeps a command out of other processes' memory and environment."""
    if landlock_support().available:
        return "landlock"
    return "pid-namespace" if pid_namespace_prefix() is not None else "none"


def sandbox_note(policy: SandboxPolicy) -> str | None:
    """One line for a front end to print once, when commands run less confined than asked."""
    support = landlock_support()
    if support.available:
        if policy.mode == "off":
            return "bash sandbox off: commands may write anywhere and use the network"
        if not policy.network and support.abi < 4:
            return f"bash sandbox: network is not restricted (Landlock ABI {support.abi}; TCP rules need Linux 6.7+)"
        if not policy.network and seccomp_reason():
            return f"bash sandbox: network is not fully restricted (MPTCP stays open: {seccomp_reason()})"
        return None
    isolation = process_isolation()
    if isolation == "pid-namespace":
        hidden = "each runs in its own PID namespace (other processes hidden; background jobs end with the command)"
    else:
        hidden = "other processes' environments are readable to them"
    if policy.mode == "off":
        return f"bash sandbox off; {hidden}"
    return f"bash commands run without a sandbox: {support.reason}; {hidden}"


def confine(policy: SandboxPolicy, workspace: Path, scratch_dir: Path) -> Confinement:
    """Prepare the confinement of one command. Close it once the command has started.

    Raises OSError when Landlock is there but the ruleset cannot be built (fails closed).
    """
    support = landlock_support()
    if support.available:
        # TCP rules alone leave MPTCP open, so the network counts as blocked only with the filter.
        seccomp = _network_filter() if _blocks_network(policy) and support.abi >= 4 and not seccomp_reason() else None
        fd = _build_ruleset(policy, workspace, scratch_dir, support.abi)
        try:
            preexec = _landlock_preexec(fd, _capabilities_to_drop(policy), seccomp)
        except BaseException:
            os.close(fd)
            raise
        return Confinement(
            policy=policy,
            isolation="landlock",
            sandboxed=policy.mode != "off",
            network_blocked=seccomp is not None,
            preexec_fn=preexec,
            _ruleset_fd=fd,
        )
    prefix = pid_namespace_prefix()
    if prefix is not None:
        return Confinement(policy, "pid-namespace", sandboxed=False, network_blocked=False, prefix=prefix)
    return Confinement(policy, "none", sandboxed=False, network_blocked=False)
