"""An OS sandbox for the commands the model runs: bubblewrap's namespaces where the machine has
them, Landlock and seccomp where it does not, a PID namespace where neither works.

Which layer is active is said by `sandbox_layer()` (and `localagent doctor`). The rest of this
text is about the Landlock layer.

A Landlock domain is also the boundary that keeps a command out of other processes: a sandboxed
process may not ptrace, and so may not read /proc/PID/environ or /proc/PID/mem of, any process
outside its domain (the agent, its ancestors, earlier commands). That is why even mode `off` puts
the command in a minimal domain. CAP_SYS_ADMIN or CAP_PERFMON lift that check, so a root-owned
command loses them first. Where Landlock is missing the command runs in its own user, PID and
mount namespace with its own /proc instead, so no other process is visible at all. A PID
namespace is not used on top of Landlock: `$!` would name PIDs nobody outside can use, and a
server left running in the background would die with the command's shell.

With the network off, Landlock's TCP rules leave out Multipath TCP, which a seccomp filter closes.
Where no seccomp filter can be installed the network is reported open.

The parts: `policy` (what a command may touch; how one is started), `landlock` (what the kernel
offers; the ruleset, built in the parent), `seccomp` (the network filter), `child` (what runs
between fork and exec: capabilities dropped, restrict_self), `namespace` (the fallback). This
module holds the entry points.
"""

from __future__ import annotations

import os
from pathlib import Path

from tools.sandbox.bubblewrap import LAYER_VARIABLE, bubblewrap_argv, bubblewrap_status
from tools.sandbox.child import capabilities_to_drop, landlock_preexec
from tools.sandbox.landlock import (
    LandlockSupport,
    build_ruleset,
    landlock_abi,
    landlock_support,
)
from tools.sandbox.namespace import pid_namespace_prefix
from tools.sandbox.policy import (
    SANDBOX_MODES,
    Confinement,
    Isolation,
    SandboxMode,
    SandboxPolicy,
)
from tools.sandbox.protected import PROTECTED, ProtectedState
from tools.sandbox.seccomp import command_filter, program_bytes, seccomp_reason

__all__ = [
    "LAYER_VARIABLE",
    "PROTECTED",
    "SANDBOX_MODES",
    "Confinement",
    "Isolation",
    "LandlockSupport",
    "ProtectedState",
    "SandboxMode",
    "SandboxPolicy",
    "bubblewrap_status",
    "confine",
    "landlock_abi",
    "landlock_support",
    "pid_namespace_prefix",
    "process_isolation",
    "sandbox_available",
    "sandbox_layer",
    "sandbox_note",
    "seccomp_reason",
]

# The entry points below look up bubblewrap_status, landlock_support, seccomp_reason and
# pid_namespace_prefix in this module, so a test (or a caller) that replaces them here changes what
# every entry point sees.


def sandbox_layer() -> tuple[Isolation, str]:
    """The layer a sandboxed command runs under here, and why not a stronger one."""
    program, why_not = bubblewrap_status()
    if program is not None:
        return "bubblewrap", ""
    if landlock_support().available:
        return "landlock", why_not
    isolation: Isolation = "pid-namespace" if pid_namespace_prefix() is not None else "none"
    return isolation, f"{why_not}; {landlock_support().reason}"


def _bubblewrap_serves(policy: SandboxPolicy) -> str | None:
    if policy.mode == "off":
        return None
    if not policy.network and seccomp_reason():
        return None  # without the filter a unix socket outside would stay open: Landlock says so
    return bubblewrap_status()[0]


def sandbox_available(policy: SandboxPolicy | None = None) -> bool:
    """Whether the sandbox is enforced: a layer works, and with `policy`, all it asks for."""
    if policy is not None and _bubblewrap_serves(policy) is not None:
        return True
    support = landlock_support()
    if not support.available:
        return policy is not None and policy.mode == "off"
    if policy is not None and _blocks_network(policy):
        return not seccomp_reason()
    return True


def _blocks_network(policy: SandboxPolicy) -> bool:
    return policy.mode != "off" and not policy.network


def process_isolation() -> Isolation:
    """What keeps a command out of other processes' memory and environment."""
    return sandbox_layer()[0]


def sandbox_note(policy: SandboxPolicy) -> str | None:
    """One line for a front end to print once, when commands run less confined than asked."""
    if _bubblewrap_serves(policy) is not None:
        return None
    support = landlock_support()
    if support.available:
        if policy.mode == "off":
            return "bash sandbox off: commands may write anywhere and use the network"
        if not policy.network and seccomp_reason():
            return f"bash sandbox: network is not restricted (no seccomp filter: {seccomp_reason()})"
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
    program = _bubblewrap_serves(policy)
    if program is not None:
        seccomp_fd = os.memfd_create("localagent-seccomp", 0)
        os.write(seccomp_fd, program_bytes(command_filter(not policy.network)))
        os.lseek(seccomp_fd, 0, os.SEEK_SET)
        bwrap_argv = bubblewrap_argv(program, policy, workspace, scratch_dir, seccomp_fd)
        return Confinement(
            policy=policy,
            isolation="bubblewrap",
            sandboxed=True,
            network_blocked=not policy.network,
            prefix=tuple(bwrap_argv),
            pass_fds=(seccomp_fd,),
        )
    support = landlock_support()
    if support.available:
        # Landlock's TCP rules miss fast open, listen(), UDP and unix sockets: the network counts as
        # blocked only with the filter, which refuses socket() whatever Landlock's ABI. The filter
        # also keeps prlimit and the other by-pid calls off other processes, in every mode.
        seccomp = None if seccomp_reason() else command_filter(_blocks_network(policy))
        fd = build_ruleset(policy, workspace, scratch_dir, support.abi)
        try:
            preexec = landlock_preexec(fd, capabilities_to_drop(policy), seccomp)
        except BaseException:
            os.close(fd)
            raise
        return Confinement(
            policy=policy,
            isolation="landlock",
            sandboxed=policy.mode != "off",
            network_blocked=seccomp is not None and _blocks_network(policy),
            preexec_fn=preexec,
            _ruleset_fd=fd,
        )
    prefix = pid_namespace_prefix()
    if prefix is not None:
        return Confinement(policy, "pid-namespace", sandboxed=False, network_blocked=False, prefix=prefix)
    return Confinement(policy, "none", sandboxed=False, network_blocked=False)
