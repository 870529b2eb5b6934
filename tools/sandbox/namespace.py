"""The fallback where Landlock is missing: a user, PID and mount namespace of the command's own."""

from __future__ import annotations

import functools
import subprocess
import sys

from tools.program_path import which_absolute

_NAMESPACE_PROBE_SECONDS = 5.0


@functools.cache
def pid_namespace_prefix() -> tuple[str, ...] | None:
    """`unshare` argv that gives a command its own user, PID and mount namespace and /proc.

    None where util-linux unshare is missing or the kernel refuses unprivileged namespaces.
    `--kill-child` makes the namespace die with unshare, so killing the process group is enough.
    """
    unshare = which_absolute("unshare")  # never a program of that name in the repository
    if unshare is None or sys.platform != "linux":
        return None
    prefix = (unshare, "--user", "--map-current-user", "--pid", "--fork", "--mount-proc", "--kill-child", "--")
    try:
        probe = subprocess.run(
            [*prefix, "true"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=_NAMESPACE_PROBE_SECONDS,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return prefix if probe.returncode == 0 else None
