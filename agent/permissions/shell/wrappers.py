"""Commands that run another command, and how each takes its own options.

The table says, for `sudo`, `nice`, `timeout`, `xargs`, `env`, `strace`, ..., which short and long
options take a value, which stop it from running anything (`command -v`), what operands come
before the command, and whether it may start a shell that reads standard input instead.
agent.permissions.shell.options reads a command line by these rules.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

__all__ = [
    "COMMAND_PROPERTIES", "PARALLEL", "PARALLEL_REPLACEMENT", "PARALLEL_SOURCES", "RUNUSER", "SCRIPT", "WRAPPERS", "Wrapper",
]  # fmt: skip


@dataclass(frozen=True)
class Wrapper:
    """How a command that runs another command takes its own options."""

    flags: str = ""  # short options without a value
    values: str = ""  # short options with a value (attached or the next word)
    optional: str = ""  # short options whose value, if any, is attached (xargs -i, -l, -e)
    long_flags: frozenset[str] = frozenset()
    long_values: frozenset[str] = frozenset()
    # Options after which nothing is run (`command -v`, `ionice -p`).
    stops: str = ""
    long_stops: frozenset[str] = frozenset()
    # Operands between the options and the command (timeout's duration, chrt's priority).
    operands: int = 0
    # Operands before the options (setarch's architecture).
    leading_operands: int = 0
    # `NAME=value` words may come before the command.
    assignments: bool = False
    # `-5` as an option (nice).
    numeric: bool = False
    # A lone `-` is an option (env).
    dash: bool = False
    # The option whose value is itself a command line (env -S).
    split: str = ""
    long_split: str = ""
    # Every `--name` or `--name=value` is one word (firejail, valgrind).
    long_single: bool = False
    # Without a command it starts an interactive shell, which reads commands from standard input;
    # with `shell_options`, only when one of them is given (`sudo -s`).
    bare_shell: bool = False
    shell_options: frozenset[str] = frozenset()
    # Words right after the operands that make the next word a command string for `sh -c` (flock -c).
    command_string: frozenset[str] = frozenset()
    # The command's words are joined and run by `sh -c` (watch), unless one of these options is given.
    joined: bool = False
    exec_options: frozenset[str] = frozenset()


def _opts(*names: str) -> frozenset[str]:
    return frozenset(names)


WRAPPERS: dict[str, Wrapper] = {
    "sudo": Wrapper(
        flags="AbEeHhiKklnPSsVv", values="CDgpRrTtUu", assignments=True, bare_shell=True,
        shell_options=_opts("s", "i", "shell", "login"),
        long_flags=_opts("askpass", "background", "bell", "edit", "help", "set-home", "login", "remove-timestamp",
                         "reset-timestamp", "list", "non-interactive", "preserve-groups", "stdin", "shell",
                         "version", "validate", "preserve-env"),
        long_values=_opts("close-from", "chdir", "group", "host", "prompt", "chroot", "role", "type",
                          "command-timeout", "other-user", "user"),
    ),
    "doas": Wrapper(flags="nsL", values="Cu", bare_shell=True, shell_options=_opts("s")),
    "pkexec": Wrapper(long_flags=_opts("disable-internal-agent", "keep-cwd"), long_values=_opts("user")),
    "env": Wrapper(
        flags="i0v", values="uCa", assignments=True, dash=True, split="S", long_split="split-string",
        long_flags=_opts("ignore-environment", "null", "debug", "list-signal-handling", "block-signal",
                         "default-signal", "ignore-signal"),
        long_values=_opts("unset", "chdir", "argv0"),
    ),
    "nice": Wrapper(values="n", numeric=True, long_values=_opts("adjustment")),
    "nohup": Wrapper(),
    "timeout": Wrapper(
        flags="v", values="ks", operands=1,
        long_flags=_opts("preserve-status", "foreground", "verbose"), long_values=_opts("kill-after", "signal"),
    ),
    "stdbuf": Wrapper(values="ioe", long_values=_opts("input", "output", "error")),
    "ionice": Wrapper(
        flags="t", values="cnpPu", stops="pPu",
        long_flags=_opts("ignore"), long_values=_opts("class", "classdata", "pid", "pgid", "uid"),
        long_stops=_opts("pid", "pgid", "uid"),
    ),
    "chrt": Wrapper(
        flags="abdefiorRvmp", values="TPD", stops="pm", operands=1,
        long_flags=_opts("all-tasks", "batch", "deadline", "ext", "fifo", "idle", "other", "rr", "reset-on-fork",
                         "verbose", "max", "pid"),
        long_values=_opts("sched-runtime", "sched-period", "sched-deadline"), long_stops=_opts("max", "pid"),
    ),
    "setsid": Wrapper(flags="cfw", long_flags=_opts("ctty", "fork", "wait")),
    "time": Wrapper(
        flags="apqv", values="fo", long_flags=_opts("append", "portability", "quiet", "verbose"),
        long_values=_opts("format", "output"),
    ),
    "command": Wrapper(flags="pvV", stops="vV"),
    "builtin": Wrapper(),
    "exec": Wrapper(flags="cl", values="a"),
    "xargs": Wrapper(
        flags="0oprtx", values="adEILnPs", optional="eil",
        long_flags=_opts("null", "open-tty", "interactive", "no-run-if-empty", "verbose", "exit", "show-limits",
                         "eof", "replace", "max-lines"),
        long_values=_opts("arg-file", "delimiter", "max-args", "max-procs", "max-chars", "process-slot-var"),
    ),
    "busybox": Wrapper(),
    "chroot": Wrapper(
        operands=1, bare_shell=True, long_flags=_opts("skip-chdir"), long_values=_opts("userspec", "groups"),
    ),
    # util-linux
    "taskset": Wrapper(
        flags="ac", stops="phV", operands=1,
        long_flags=_opts("all-tasks", "cpu-list"), long_stops=_opts("pid", "help", "version"),
    ),
    "flock": Wrapper(
        flags="sexunoF", values="wE", stops="hV", operands=1, command_string=_opts("-c", "--command"),
        long_flags=_opts("shared", "exclusive", "unlock", "nonblock", "nonblocking", "nb", "close", "no-fork",
                         "verbose"),
        long_values=_opts("timeout", "wait", "conflict-exit-code"), long_stops=_opts("help", "version"),
    ),
    "unshare": Wrapper(
        flags="frc", optional="muinpUCT", values="RwSG", stops="hV", bare_shell=True,
        long_flags=_opts("mount", "uts", "ipc", "net", "pid", "user", "cgroup", "time", "fork", "map-root-user",
                         "map-current-user", "map-auto", "kill-child", "mount-proc", "keep-caps"),
        long_values=_opts("map-user", "map-group", "map-users", "map-groups", "propagation", "setgroups", "root",
                          "wd", "setuid", "setgid", "monotonic", "boottime"),
        long_stops=_opts("help", "version"),
    ),
    "nsenter": Wrapper(
        flags="aFZ", optional="muinpCUTrw", values="tSGW", stops="hV", bare_shell=True,
        long_flags=_opts("all", "no-fork", "follow-context", "preserve-credentials", "mount", "uts", "ipc", "net",
                         "pid", "cgroup", "user", "time", "root", "wd"),
        long_values=_opts("target", "setuid", "setgid", "wdns"), long_stops=_opts("help", "version"),
    ),
    "setpriv": Wrapper(
        stops="dhV",
        long_flags=_opts("nnp", "no-new-privs", "clear-groups", "keep-groups", "init-groups", "reset-env"),
        long_values=_opts("ambient-caps", "inh-caps", "bounding-set", "ruid", "euid", "rgid", "egid", "reuid",
                          "regid", "groups", "securebits", "pdeathsig", "selinux-label", "apparmor-profile",
                          "landlock-access", "landlock-rule"),
        long_stops=_opts("dump", "help", "version"),
    ),
    "setarch": Wrapper(
        flags="BFILRSTXZ3v", stops="hV", leading_operands=1, bare_shell=True,
        long_flags=_opts("32bit", "fdpic-funcptrs", "short-inode", "addr-compat-layout", "addr-no-randomize",
                         "whole-seconds", "sticky-timeouts", "read-implies-exec", "mmap-page-zero", "3gb", "4gb",
                         "uname-2.6", "verbose"),
        long_stops=_opts("list", "help", "version"),
    ),
    "prlimit": Wrapper(
        optional="cdefilmnqrstuvxy", values="po", stops="hV",
        long_flags=_opts("noheadings", "raw", "verbose", "core", "data", "nice", "fsize", "sigpending", "memlock",
                         "rss", "nofile", "msgqueue", "rtprio", "stack", "cpu", "nproc", "as", "locks", "rttime"),
        long_values=_opts("pid", "output"), long_stops=_opts("help", "version"),
    ),
    "watch": Wrapper(
        flags="bcCegprtwx", optional="d", values="nq", stops="hv", joined=True, exec_options=_opts("x", "exec"),
        long_flags=_opts("beep", "color", "no-color", "errexit", "chgexit", "precise", "no-title", "no-wrap", "exec",
                         "differences", "no-rerun"),
        long_values=_opts("interval", "equexit"), long_stops=_opts("help", "version"),
    ),
    # Tracers and debuggers run their command.
    "strace": Wrapper(
        flags="AcCdDfFiknNqrtTvwxyYzZ", values="abeEIoOpPsSuUX", stops="hV",
        long_flags=_opts("follow-forks", "output-separately", "output-append-mode", "summary-only", "summary",
                         "summary-wall-clock", "instruction-pointer", "stack-traces", "syscall-number",
                         "successful-only", "failed-only", "no-abbrev", "debug", "seccomp-bpf", "daemonize", "quiet",
                         "absolute-timestamps", "relative-timestamps", "syscall-times", "decode-fds"),
        long_values=_opts("output", "attach", "user", "env", "detach-on", "interruptible", "trace", "signal",
                          "status", "trace-path", "columns", "abbrev", "verbose", "raw", "read", "write", "kvm",
                          "string-limit", "const-print-style", "summary-syscall-overhead", "summary-sort-by",
                          "summary-columns", "inject", "fault"),
        long_stops=_opts("help", "version"),
    ),
    "ltrace": Wrapper(
        flags="bcCfiLrStT", values="aADeFlnopsuwx", stops="hV",
        long_flags=_opts("demangle", "no-signals"),
        long_values=_opts("align", "config", "indent", "library", "output", "where"),
        long_stops=_opts("help", "version"),
    ),
    "valgrind": Wrapper(flags="qv", stops="h", long_single=True, long_stops=_opts("help", "help-debug", "version")),
    "catchsegv": Wrapper(),
    # Environments and sandboxes that run their command.
    "fakeroot": Wrapper(
        flags="u", values="lfisb", stops="hv", bare_shell=True, long_flags=_opts("unknown-is-real"),
        long_values=_opts("lib", "faked", "fd-base"), long_stops=_opts("help", "version"),
    ),
    "numactl": Wrapper(
        flags="alb", values="imNCp", stops="sH",
        long_flags=_opts("localalloc", "all", "balancing"),
        long_values=_opts("interleave", "membind", "cpunodebind", "physcpubind", "preferred"),
        long_stops=_opts("show", "hardware"),
    ),
    "dbus-run-session": Wrapper(
        long_values=_opts("config-file", "dbus-daemon"), long_stops=_opts("help", "version"),
    ),
    "systemd-run": Wrapper(
        flags="dtPqGrS", values="uHMpE", stops="h", bare_shell=True, shell_options=_opts("S", "shell"),
        long_flags=_opts("no-ask-password", "user", "system", "scope", "slice-inherit", "no-block",
                         "remain-after-exit", "wait", "send-sighup", "same-dir", "pty", "pipe", "quiet", "collect",
                         "shell", "on-timezone-change", "on-clock-change"),
        long_values=_opts("host", "machine", "unit", "property", "description", "slice", "service-type", "uid",
                          "gid", "nice", "working-directory", "setenv", "path-property", "socket-property",
                          "on-active", "on-boot", "on-startup", "on-unit-active", "on-unit-inactive", "on-calendar",
                          "timer-property"),
        long_stops=_opts("help", "version"),
    ),
    "firejail": Wrapper(long_single=True, bare_shell=True, long_stops=_opts("help", "version")),
    "proxychains": Wrapper(flags="q", values="f"),
    "proxychains4": Wrapper(flags="q", values="f"),
    "chronic": Wrapper(flags="ev"),
    "caffeinate": Wrapper(flags="dimsu", values="tw"),
    "eatmydata": Wrapper(),
    "unbuffer": Wrapper(flags="p"),
    "faketime": Wrapper(flags="mf", operands=1, long_flags=_opts("exclude-monotonic")),
}  # fmt: skip
WRAPPERS["linux32"] = WRAPPERS["linux64"] = replace(WRAPPERS["setarch"], leading_operands=0)
# `runuser -u USER [--] COMMAND...` runs COMMAND directly (with -c it is su's form).
RUNUSER = Wrapper(
    flags="lmpfP", values="ugGsw", stops="hV", dash=True,
    long_flags=_opts("login", "preserve-environment", "fast", "pty"),
    long_values=_opts("user", "group", "supp-group", "shell", "whitelist-environment"),
    long_stops=_opts("help", "version"),
)  # fmt: skip
# GNU parallel's options before its command; its command and inputs are read in CommandReader.parallel.
PARALLEL = Wrapper(
    flags="0kqtuvXmgr", values="jnNIadSCLPsE", stops="hV",
    long_flags=_opts("keep-order", "quote", "verbose", "ungroup", "null", "no-run-if-empty", "group",
                     "line-buffer", "lb", "bar", "progress", "eta", "dry-run", "dryrun", "tag", "xargs", "pipe",
                     "will-cite"),
    long_values=_opts("jobs", "max-procs", "max-args", "max-replace-args", "arg-file", "delimiter", "colsep",
                      "sshlogin", "halt", "timeout", "joblog", "results", "retries", "delay", "memfree", "load",
                      "tmpdir", "workdir", "env", "tagstring", "max-chars", "block"),
    long_stops=_opts("help", "version"),
)  # fmt: skip
PARALLEL_SOURCES = frozenset({":::", "::::", ":::+", "::::+"})
# `{}`, `{.}`, `{/}`, `{1}`, ...: where parallel puts an input.
PARALLEL_REPLACEMENT = re.compile(r"\{[^{}\s]*\}")
# script(1): `-c CMD` goes to the shell; other options are read as for a wrapper, though
# script runs no command of its own (see CommandReader.script_command).
SCRIPT = Wrapper(
    flags="aefqw", values="cIOBTmEo", optional="t", stops="hV",
    long_flags=_opts("append", "return", "flush", "force", "quiet", "timing"),
    long_values=_opts("log-in", "log-out", "log-io", "log-timing", "logging-format", "command", "echo",
                      "output-limit"),
    long_stops=_opts("help", "version"),
)  # fmt: skip
# systemd unit properties that are commands (`-p ExecStartPre=...`).
COMMAND_PROPERTIES = frozenset({"p", "property", "path-property", "socket-property", "timer-property"})
