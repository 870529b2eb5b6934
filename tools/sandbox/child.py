"""The child's part of the confinement, run between fork and exec, and the capabilities it drops.

A Landlock domain is also the boundary that keeps a command out of other processes, and
CAP_SYS_ADMIN or CAP_PERFMON lift that check, so a root-owned command loses them first.
"""

from __future__ import annotations

import ctypes
import errno
import os
from collections.abc import Callable
from pathlib import Path

from tools.sandbox.landlock import syscall_numbers
from tools.sandbox.libc import libc_handle
from tools.sandbox.policy import SandboxPolicy
from tools.sandbox.seccomp import PR_SET_SECCOMP, SECCOMP_MODE_FILTER, SeccompProgram

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


def _capability_mask(field_name: str) -> int:
    """A capability set of this process from /proc/self/status (CapEff, CapBnd, ...)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field_name + ":"):
                return int(line.split()[1], 16)
    except (OSError, ValueError):
        pass
    return 0


def capabilities_to_drop(policy: SandboxPolicy) -> tuple[int, ...]:
    """Bounding-set entries to drop; only a root-owned command regains capabilities on exec."""
    if os.geteuid() != 0:
        return ()
    bounding = _capability_mask("CapBnd")
    wanted = _BOUNDARY_CAPABILITIES if policy.mode == "off" else range(64)
    drop = tuple(cap for cap in wanted if cap not in _KEPT_CAPABILITIES and bounding >> cap & 1)
    if drop and not _capability_mask("CapEff") >> _CAP_SETPCAP & 1:
        raise OSError(errno.EPERM, "root without CAP_SETPCAP cannot drop the capabilities that would lift the sandbox")
    return drop


def landlock_preexec(
    ruleset_fd: int, drop: tuple[int, ...], seccomp: SeccompProgram | None = None
) -> Callable[[], None]:
    """The child's part, run between fork and exec: only prctl and restrict_self.

    Every argument is a ready ctypes object, so nothing is built in the child but the call.
    """
    libc = libc_handle()
    prctl, syscall = libc.prctl, libc.syscall
    zero = ctypes.c_ulong(0)
    drops = tuple((ctypes.c_int(_PR_CAPBSET_DROP), ctypes.c_ulong(cap)) for cap in drop)
    ambient = (ctypes.c_int(_PR_CAP_AMBIENT), ctypes.c_ulong(_PR_CAP_AMBIENT_CLEAR_ALL))
    no_new_privs = (ctypes.c_int(_PR_SET_NO_NEW_PRIVS), ctypes.c_ulong(1))
    numbers = syscall_numbers()
    assert numbers is not None
    restrict = (ctypes.c_long(numbers[2]), ctypes.c_long(ruleset_fd), ctypes.c_long(0))
    set_seccomp = (ctypes.c_int(PR_SET_SECCOMP), ctypes.c_ulong(SECCOMP_MODE_FILTER))
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
