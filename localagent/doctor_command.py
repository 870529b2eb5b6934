"""``localagent doctor``: what protects this machine's commands, and why not more.

Names the bash sandbox's layer in force (bubblewrap's namespaces, Landlock with seccomp, a bare
PID namespace, or nothing), the reason a stronger layer is not used, and what each part holds.
"""

from __future__ import annotations

import argparse


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    doctor = commands.add_parser("doctor", help="which sandbox layer protects commands on this machine, and why")
    doctor.set_defaults(handler=cmd_doctor)


def sandbox_report() -> list[str]:
    """Lines, one fact each, about the bash sandbox on this machine."""
    from tools import sandbox

    layer, why_not = sandbox.sandbox_layer()
    program, bwrap_reason = sandbox.bubblewrap_status()
    support = sandbox.landlock_support()
    seccomp = sandbox.seccomp_reason()
    lines = []
    if layer == "bubblewrap":
        lines.append(f"bash sandbox: bubblewrap ({program}): own mount, PID, IPC and network namespaces")
    elif layer == "landlock":
        lines.append(f"bash sandbox: Landlock ABI {support.abi} with seccomp (bubblewrap not used: {why_not})")
    elif layer == "pid-namespace":
        lines.append(f"bash sandbox: NONE; commands only get their own PID namespace ({why_not})")
    else:
        lines.append(f"bash sandbox: NONE ({why_not})")
    lines.append(f"  bubblewrap: {program}" if program else f"  bubblewrap: not used ({bwrap_reason})")
    lines.append(
        f"  landlock: ABI {support.abi}" if support.available else f"  landlock: unavailable ({support.reason})"
    )
    lines.append(
        "  seccomp: socket() refused with the network off" if not seccomp else f"  seccomp: unavailable ({seccomp})"
    )
    holds = {
        "bubblewrap": "writes outside the workspace and temp folders, protected paths, every network "
                      "socket, signals to other processes, secret home folders and session services",
        "landlock": "writes outside the workspace and temp folders, every network socket, signals to "
                    "other processes; protected paths are put back after each command; secret home "
                    "folders stay readable",
    }.get(layer, "nothing: commands run with your rights")  # fmt: skip
    lines.append(f"  holds: {holds}")
    lines.append(f"  protected paths: {', '.join(sandbox.PROTECTED)}")
    lines.append(f"  choose Landlock by hand: {sandbox.LAYER_VARIABLE}=landlock")
    return lines


def cmd_doctor(args: argparse.Namespace) -> int:
    from localagent.console import out

    for line in sandbox_report():
        out.print(line, markup=False, soft_wrap=True)
    return 0
