"""The seccomp filter of a sandboxed command: no reach into other processes by pid, no kernel
keyring, and with the network off no socket() at all and no io_uring.

Landlock's scopes stop signals and ptrace, not prlimit64 (a CPU limit of 0 kills the agent),
setpriority, ioprio_set or the sched_set* calls: those are refused unless their pid is 0 ("this
process", which is how `ulimit`, `nice` and libraries call them). The kernel keyring is refused.

Landlock sees only connect() and bind() on TCP; a socket still reaches a listener through
sendto()/sendmsg() with MSG_FASTOPEN, opens a port with listen() on an unbound socket, speaks UDP,
and connects to any named unix socket the command can see (a desktop's session bus, docker.sock,
an ssh or gpg agent). So with the network off, as Codex and Claude Code do on Linux, socket() fails
for every family (EACCES: "Permission denied"). socketpair() stays: pipes between a program's own
processes (asyncio, subprocess, multiprocessing's fork and spawn) need it and reach no one else.
io_uring_setup fails too, since IORING_OP_SOCKET creates sockets where seccomp cannot see them.
The filter is written in classic BPF and assembled here, once per process; under bubblewrap the
same program is handed to bwrap (`--seccomp`), which installs it after setting up the namespaces.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import os
import platform
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from tools.sandbox.libc import libc_handle

PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
_SECCOMP_RET_ALLOW = 0x7FFF0000
_SECCOMP_RET_ERRNO = 0x00050000
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
class _Denial:
    """One system call refused with `errno`; with `arg`, only when that argument equals `value`
    (or, with `unless_zero`, only when it is not 0: "this process" for the calls that take a pid)."""

    nr: int
    errno: int
    arg: int | None = None
    value: int = 0
    unless_zero: bool = False


@dataclass(frozen=True)
class _ArchRules:
    audit_arch: int
    denials: tuple[_Denial, ...]
    nr_mask: int = 0xFFFFFFFF


@dataclass(frozen=True)
class _Table:
    """One system call table's numbers for what the filter refuses."""

    audit_arch: int
    socket: int
    io_uring_setup: int
    # Calls that act on another process by pid and that Landlock's scopes do not cover:
    # prlimit64 (a CPU limit of 0 kills the agent), setpriority, ioprio_set, sched_setparam,
    # sched_setscheduler, sched_setattr. Refused unless the pid is 0, "this process".
    by_pid: tuple[tuple[int, int], ...]  # (number, index of the pid argument)
    # The kernel keyring (add_key, request_key, keyctl): a user's keys are shared by all of
    # their processes, so a command could read what the person's other programs stored there.
    keyring: tuple[int, ...]
    socketcall: int | None = None
    nr_mask: int = 0xFFFFFFFF


_TABLES: dict[str, tuple[_Table, ...]] = {
    # A 64-bit x86 process can also make i386 calls (int 0x80) and x32 calls (the x32 bit in the
    # number), so those tables are covered too.
    "x86_64": (
        _Table(
            _AUDIT_ARCH_X86_64,
            41,
            425,
            ((302, 0), (141, 1), (251, 1), (142, 0), (144, 0), (314, 0)),
            (248, 249, 250),
            nr_mask=~_X32_SYSCALL_BIT & 0xFFFFFFFF,
        ),
        _Table(
            _AUDIT_ARCH_I386,
            359,
            425,
            ((340, 0), (97, 1), (289, 1), (154, 0), (156, 0), (351, 0)),
            (286, 287, 288),
            socketcall=102,
        ),
    ),
    "aarch64": (
        _Table(
            _AUDIT_ARCH_AARCH64, 198, 425, ((261, 0), (140, 1), (30, 1), (118, 0), (119, 0), (274, 0)), (217, 218, 219)
        ),
        # AArch32 EABI has no socketcall.
        _Table(_AUDIT_ARCH_ARM, 281, 425, ((369, 0), (97, 1), (314, 1), (154, 0), (156, 0), (380, 0)), (309, 310, 311)),
    ),
}
_TABLES["arm64"] = _TABLES["aarch64"]


def _rules(table: _Table, network_off: bool) -> _ArchRules:
    denials = [_Denial(nr, errno.EPERM, arg=index, unless_zero=True) for nr, index in table.by_pid]
    denials += [_Denial(nr, errno.EPERM) for nr in table.keyring]
    if network_off:
        # ENOSYS makes io_uring users fall back to plain system calls.
        denials += [_Denial(table.socket, errno.EACCES), _Denial(table.io_uring_setup, errno.ENOSYS)]
        if table.socketcall is not None:
            # i386 socketcall: its first argument says which call it stands for.
            denials.append(_Denial(table.socketcall, errno.EACCES, arg=0, value=_SYS_SOCKET))
    return _ArchRules(table.audit_arch, tuple(denials), table.nr_mask)


def rules_for(machine: str, network_off: bool) -> tuple[_ArchRules, ...]:
    return tuple(_rules(table, network_off) for table in _TABLES[machine])


_Insn = tuple[int, int | str, int | str, int]  # code, jt, jf, k; a str jump names a label


class _SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_SockFilter))]


@dataclass(frozen=True)
class SeccompProgram:
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
            block.append((_BPF_LD_W_ABS, 0, 0, _arg_low_word(denial.arg)))
            if denial.unless_zero:
                block.append((_BPF_JEQ_K, allow, 0, 0))
            else:
                block.append((_BPF_JEQ_K, 0, allow, denial.value))
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


def program_bytes(program: SeccompProgram) -> bytes:
    """The filter as bwrap's `--seccomp FD` reads it: the struct sock_filter array, raw."""
    return ctypes.string_at(ctypes.addressof(program.instructions), ctypes.sizeof(program.instructions))


@functools.cache
def command_filter(network_off: bool) -> SeccompProgram:
    """The filter every sandboxed command runs under; with `network_off`, no sockets either."""
    arches = rules_for(platform.machine().lower(), network_off)
    insns = _assemble(_filter_source(arches))
    array = (_SockFilter * len(insns))(*(_SockFilter(*insn) for insn in insns))
    return SeccompProgram(array, _SockFprog(len(insns), ctypes.cast(array, ctypes.POINTER(_SockFilter))))


@functools.cache
def seccomp_reason() -> str:
    """Why the network filter cannot be installed here; empty when it can."""
    if sys.platform != "linux" or platform.machine().lower() not in _TABLES:
        return f"no seccomp filter is known for {sys.platform} on {platform.machine()}"
    # A NULL program installs nothing: EFAULT says filter mode is there and the pointer was read.
    probe = libc_handle().prctl(
        ctypes.c_int(PR_SET_SECCOMP), ctypes.c_ulong(SECCOMP_MODE_FILTER), None, ctypes.c_ulong(0), ctypes.c_ulong(0)
    )
    if probe == 0:
        return "seccomp answered a probe that must fail"
    err = ctypes.get_errno()
    if err == errno.EFAULT:
        return ""
    if err == errno.EINVAL:
        return "the kernel has no seccomp filters (CONFIG_SECCOMP_FILTER)"
    return f"seccomp filters are refused: {os.strerror(err)}"
