"""What a bash command line runs, read the way bash reads it, for the permission rules.

The bash tool runs `bash -c COMMAND`. Rules are written against commands (`bash(rm -rf*)`), so
the policy needs every simple command the line can run: those in pipelines, lists, subshells,
braces and substitutions, those behind wrappers (`sudo`, `nice -n 5`, `timeout 5`, `xargs`,
`env`, `command`, ...), and those inside command strings (`bash -c '...'`, `eval ...`).

The line is parsed with tree-sitter's bash grammar, after its line continuations are joined as
bash joins them (see join_continuations). Words are read after quote removal (`"rm"`, `\\rm`
and `r'm'` are all `rm`); a word whose value only bash can know at run time (`$X`, `$(...)`,
`{a,b}`, what xargs adds from its input) is a hole. Whatever the reader cannot follow with
confidence is recorded as a doubt: the policy then never lets a rule allow the line, and never
lets a deny rule pass it silently. Commands whose text is only there at run time are doubts:
a shell given a script file (`bash x.sh`, `source x.sh`) or standard input it cannot see
(`... | bash /dev/stdin`, `xargs sh -c`), and wrappers that start a shell with no command.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache

import tree_sitter_bash
from tree_sitter import Language, Node, Parser

__all__ = ["CommandAnalysis", "SimpleCommand", "Word", "analyse", "join_continuations"]

# Deeper than this (bash -c inside eval inside sudo ...) is not worth following.
_MAX_DEPTH = 8
# Anything run through these reads the next argument (after -c) as a script.
_SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh", "mksh", "ash", "yash", "fish", "csh", "tcsh"})
# A script file that is standard input (`printf ... | bash /dev/stdin`).
_STDIN_FILES = frozenset({"/dev/stdin", "/dev/fd/0", "/proc/self/fd/0"})
# Reserved words never name a command; seeing one as a name means the parse went wrong.
_RESERVED = frozenset(
    {"{", "}", "(", ")", "!", "then", "fi", "do", "done", "esac", "in", "elif", "else", "if", "while", "until",
     "for", "case", "select", "function", "[[", "]]"}
)  # fmt: skip
_ARITHMETIC_TESTS = frozenset({"-eq", "-ne", "-lt", "-le", "-gt", "-ge"})
_WRITE_REDIRECTS = frozenset({">", ">>", ">|", "&>", "&>>", "<>"})
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\+?=.*", re.DOTALL)
# Parameter expansions that only substitute a value. Others can hide code: `${x@P}` expands
# `$(...)` in the value, and subscripts and offsets are arithmetic, which runs `a[$(...)]`.
_PLAIN_EXPANSION = re.compile(
    r"\$\{(?:#?(?:[A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*#?$!-])\}"
    r"|[A-Za-z_][A-Za-z0-9_]*(?::?[-=+?]|##?|%%?|//?|/[#%]|\^\^?|,,?|@[QEUuLaAKk]\}))",
    re.DOTALL,
)
_BRACE_EXPANSION = re.compile(r"\{[^{}\x00]*(?:,|\.\.)[^{}\x00]*\}")
_ANSI_C_ESCAPES = {"a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n", "r": "\r", "t": "\t",
                   "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"}  # fmt: skip


@dataclass(frozen=True)
class Word:
    # After quote removal when `literal`; otherwise the source text, for people to read.
    value: str
    # False when only bash can know the value (an expansion, a substitution, a brace pattern).
    literal: bool = True
    # Written without quotes or backslashes, so it is shown as written (a glob stays a glob).
    plain: bool = True
    # Has unquoted `*`, `?` or `[`: bash may replace it with file names.
    globbing: bool = False

    def render(self) -> str:
        """The word as rules see it: quoted only where the quoting matters."""
        if self.plain or not self.literal:
            return self.value
        return shlex.quote(self.value)


@dataclass(frozen=True)
class SimpleCommand:
    words: tuple[Word, ...]
    # `NAME=value` prefixes, as written.
    assignments: tuple[str, ...] = ()
    # The command as written, whitespace squashed.
    source: str = ""

    @property
    def name(self) -> Word | None:
        return self.words[0] if self.words else None

    def text(self, *, assignments: bool = True, basename: bool = False) -> str:
        return " ".join(self._pieces(assignments, basename))

    def shape(self, *, assignments: bool = True, basename: bool = False) -> tuple[str | None, ...]:
        """The text with every hole as None, for asking whether a rule could match some value."""
        out: list[str | None] = []
        for index, (piece, word) in enumerate(self._pieces_with_words(assignments, basename)):
            if index:
                out.append(" ")
            out.append(piece if word is None or word.literal else None)
        return tuple(out)

    def _pieces(self, assignments: bool, basename: bool) -> list[str]:
        return [piece for piece, _ in self._pieces_with_words(assignments, basename)]

    def _pieces_with_words(self, assignments: bool, basename: bool) -> list[tuple[str, Word | None]]:
        pieces: list[tuple[str, Word | None]] = [(a, None) for a in self.assignments] if assignments else []
        for index, word in enumerate(self.words):
            text = word.render()
            if index == 0 and basename and word.literal and "/" in word.value:
                text = Word(posixpath.basename(word.value), plain=word.plain).render()
            pieces.append((text, word))
        return pieces


@dataclass(frozen=True)
class CommandAnalysis:
    # Every simple command the line runs: wrappers and what they wrap, shells and their scripts.
    commands: tuple[SimpleCommand, ...]
    # Why the line cannot be read with confidence; empty when it can.
    doubts: tuple[str, ...]
    # Output goes into a file (not a file descriptor or /dev/null).
    writes_files: bool
    # Commands in quoted text that bash may still run (`PS4='$(...)'`): for deny rules only.
    embedded: tuple[SimpleCommand, ...] = ()
    # The line as bash reads it: line continuations removed.
    text: str = ""

    @property
    def readable(self) -> bool:
        return not self.doubts


@lru_cache(maxsize=512)
def analyse(command: str) -> CommandAnalysis:
    reader = _Reader()
    try:
        reader.script(command)
    except RecursionError:
        # Thousands of nested parentheses: nothing that deep is read with confidence.
        return CommandAnalysis((), ("nesting too deep to follow",), False)
    return CommandAnalysis(
        tuple(reader.commands), tuple(reader.doubts), reader.writes_files, tuple(reader.embedded), reader.text
    )


# -- wrappers ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Wrapper:
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


_WRAPPERS: dict[str, _Wrapper] = {
    "sudo": _Wrapper(
        flags="AbEeHhiKklnPSsVv", values="CDgpRrTtUu", assignments=True, bare_shell=True,
        shell_options=_opts("s", "i", "shell", "login"),
        long_flags=_opts("askpass", "background", "bell", "edit", "help", "set-home", "login", "remove-timestamp",
                         "reset-timestamp", "list", "non-interactive", "preserve-groups", "stdin", "shell",
                         "version", "validate", "preserve-env"),
        long_values=_opts("close-from", "chdir", "group", "host", "prompt", "chroot", "role", "type",
                          "command-timeout", "other-user", "user"),
    ),
    "doas": _Wrapper(flags="nsL", values="Cu", bare_shell=True, shell_options=_opts("s")),
    "pkexec": _Wrapper(long_flags=_opts("disable-internal-agent", "keep-cwd"), long_values=_opts("user")),
    "env": _Wrapper(
        flags="i0v", values="uCa", assignments=True, dash=True, split="S", long_split="split-string",
        long_flags=_opts("ignore-environment", "null", "debug", "list-signal-handling", "block-signal",
                         "default-signal", "ignore-signal"),
        long_values=_opts("unset", "chdir", "argv0"),
    ),
    "nice": _Wrapper(values="n", numeric=True, long_values=_opts("adjustment")),
    "nohup": _Wrapper(),
    "timeout": _Wrapper(
        flags="v", values="ks", operands=1,
        long_flags=_opts("preserve-status", "foreground", "verbose"), long_values=_opts("kill-after", "signal"),
    ),
    "stdbuf": _Wrapper(values="ioe", long_values=_opts("input", "output", "error")),
    "ionice": _Wrapper(
        flags="t", values="cnpPu", stops="pPu",
        long_flags=_opts("ignore"), long_values=_opts("class", "classdata", "pid", "pgid", "uid"),
        long_stops=_opts("pid", "pgid", "uid"),
    ),
    "chrt": _Wrapper(
        flags="abdefiorRvmp", values="TPD", stops="pm", operands=1,
        long_flags=_opts("all-tasks", "batch", "deadline", "ext", "fifo", "idle", "other", "rr", "reset-on-fork",
                         "verbose", "max", "pid"),
        long_values=_opts("sched-runtime", "sched-period", "sched-deadline"), long_stops=_opts("max", "pid"),
    ),
    "setsid": _Wrapper(flags="cfw", long_flags=_opts("ctty", "fork", "wait")),
    "time": _Wrapper(
        flags="apqv", values="fo", long_flags=_opts("append", "portability", "quiet", "verbose"),
        long_values=_opts("format", "output"),
    ),
    "command": _Wrapper(flags="pvV", stops="vV"),
    "builtin": _Wrapper(),
    "exec": _Wrapper(flags="cl", values="a"),
    "xargs": _Wrapper(
        flags="0oprtx", values="adEILnPs", optional="eil",
        long_flags=_opts("null", "open-tty", "interactive", "no-run-if-empty", "verbose", "exit", "show-limits",
                         "eof", "replace", "max-lines"),
        long_values=_opts("arg-file", "delimiter", "max-args", "max-procs", "max-chars", "process-slot-var"),
    ),
    "busybox": _Wrapper(),
    "chroot": _Wrapper(
        operands=1, bare_shell=True, long_flags=_opts("skip-chdir"), long_values=_opts("userspec", "groups"),
    ),
    # util-linux
    "taskset": _Wrapper(
        flags="ac", stops="phV", operands=1,
        long_flags=_opts("all-tasks", "cpu-list"), long_stops=_opts("pid", "help", "version"),
    ),
    "flock": _Wrapper(
        flags="sexunoF", values="wE", stops="hV", operands=1, command_string=_opts("-c", "--command"),
        long_flags=_opts("shared", "exclusive", "unlock", "nonblock", "nonblocking", "nb", "close", "no-fork",
                         "verbose"),
        long_values=_opts("timeout", "wait", "conflict-exit-code"), long_stops=_opts("help", "version"),
    ),
    "unshare": _Wrapper(
        flags="frc", optional="muinpUCT", values="RwSG", stops="hV", bare_shell=True,
        long_flags=_opts("mount", "uts", "ipc", "net", "pid", "user", "cgroup", "time", "fork", "map-root-user",
                         "map-current-user", "map-auto", "kill-child", "mount-proc", "keep-caps"),
        long_values=_opts("map-user", "map-group", "map-users", "map-groups", "propagation", "setgroups", "root",
                          "wd", "setuid", "setgid", "monotonic", "boottime"),
        long_stops=_opts("help", "version"),
    ),
    "nsenter": _Wrapper(
        flags="aFZ", optional="muinpCUTrw", values="tSGW", stops="hV", bare_shell=True,
        long_flags=_opts("all", "no-fork", "follow-context", "preserve-credentials", "mount", "uts", "ipc", "net",
                         "pid", "cgroup", "user", "time", "root", "wd"),
        long_values=_opts("target", "setuid", "setgid", "wdns"), long_stops=_opts("help", "version"),
    ),
    "setpriv": _Wrapper(
        stops="dhV",
        long_flags=_opts("nnp", "no-new-privs", "clear-groups", "keep-groups", "init-groups", "reset-env"),
        long_values=_opts("ambient-caps", "inh-caps", "bounding-set", "ruid", "euid", "rgid", "egid", "reuid",
                          "regid", "groups", "securebits", "pdeathsig", "selinux-label", "apparmor-profile",
                          "landlock-access", "landlock-rule"),
        long_stops=_opts("dump", "help", "version"),
    ),
    "setarch": _Wrapper(
        flags="BFILRSTXZ3v", stops="hV", leading_operands=1, bare_shell=True,
        long_flags=_opts("32bit", "fdpic-funcptrs", "short-inode", "addr-compat-layout", "addr-no-randomize",
                         "whole-seconds", "sticky-timeouts", "read-implies-exec", "mmap-page-zero", "3gb", "4gb",
                         "uname-2.6", "verbose"),
        long_stops=_opts("list", "help", "version"),
    ),
    "prlimit": _Wrapper(
        optional="cdefilmnqrstuvxy", values="po", stops="hV",
        long_flags=_opts("noheadings", "raw", "verbose", "core", "data", "nice", "fsize", "sigpending", "memlock",
                         "rss", "nofile", "msgqueue", "rtprio", "stack", "cpu", "nproc", "as", "locks", "rttime"),
        long_values=_opts("pid", "output"), long_stops=_opts("help", "version"),
    ),
    "watch": _Wrapper(
        flags="bcCegprtwx", optional="d", values="nq", stops="hv", joined=True, exec_options=_opts("x", "exec"),
        long_flags=_opts("beep", "color", "no-color", "errexit", "chgexit", "precise", "no-title", "no-wrap", "exec",
                         "differences", "no-rerun"),
        long_values=_opts("interval", "equexit"), long_stops=_opts("help", "version"),
    ),
    # Tracers and debuggers run their command.
    "strace": _Wrapper(
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
    "ltrace": _Wrapper(
        flags="bcCfiLrStT", values="aADeFlnopsuwx", stops="hV",
        long_flags=_opts("demangle", "no-signals"),
        long_values=_opts("align", "config", "indent", "library", "output", "where"),
        long_stops=_opts("help", "version"),
    ),
    "valgrind": _Wrapper(flags="qv", stops="h", long_single=True, long_stops=_opts("help", "help-debug", "version")),
    "catchsegv": _Wrapper(),
    # Environments and sandboxes that run their command.
    "fakeroot": _Wrapper(
        flags="u", values="lfisb", stops="hv", bare_shell=True, long_flags=_opts("unknown-is-real"),
        long_values=_opts("lib", "faked", "fd-base"), long_stops=_opts("help", "version"),
    ),
    "numactl": _Wrapper(
        flags="alb", values="imNCp", stops="sH",
        long_flags=_opts("localalloc", "all", "balancing"),
        long_values=_opts("interleave", "membind", "cpunodebind", "physcpubind", "preferred"),
        long_stops=_opts("show", "hardware"),
    ),
    "dbus-run-session": _Wrapper(
        long_values=_opts("config-file", "dbus-daemon"), long_stops=_opts("help", "version"),
    ),
    "systemd-run": _Wrapper(
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
    "firejail": _Wrapper(long_single=True, bare_shell=True, long_stops=_opts("help", "version")),
    "proxychains": _Wrapper(flags="q", values="f"),
    "proxychains4": _Wrapper(flags="q", values="f"),
    "chronic": _Wrapper(flags="ev"),
    "caffeinate": _Wrapper(flags="dimsu", values="tw"),
    "eatmydata": _Wrapper(),
    "unbuffer": _Wrapper(flags="p"),
    "faketime": _Wrapper(flags="mf", operands=1, long_flags=_opts("exclude-monotonic")),
}  # fmt: skip
_WRAPPERS["linux32"] = _WRAPPERS["linux64"] = replace(_WRAPPERS["setarch"], leading_operands=0)
# `runuser -u USER [--] COMMAND...` runs COMMAND directly (with -c it is su's form).
_RUNUSER = _Wrapper(
    flags="lmpfP", values="ugGsw", stops="hV", dash=True,
    long_flags=_opts("login", "preserve-environment", "fast", "pty"),
    long_values=_opts("user", "group", "supp-group", "shell", "whitelist-environment"),
    long_stops=_opts("help", "version"),
)  # fmt: skip
# GNU parallel's options before its command; its command and inputs are read in _Reader.parallel.
_PARALLEL = _Wrapper(
    flags="0kqtuvXmgr", values="jnNIadSCLPsE", stops="hV",
    long_flags=_opts("keep-order", "quote", "verbose", "ungroup", "null", "no-run-if-empty", "group",
                     "line-buffer", "lb", "bar", "progress", "eta", "dry-run", "dryrun", "tag", "xargs", "pipe",
                     "will-cite"),
    long_values=_opts("jobs", "max-procs", "max-args", "max-replace-args", "arg-file", "delimiter", "colsep",
                      "sshlogin", "halt", "timeout", "joblog", "results", "retries", "delay", "memfree", "load",
                      "tmpdir", "workdir", "env", "tagstring", "max-chars", "block"),
    long_stops=_opts("help", "version"),
)  # fmt: skip
_PARALLEL_SOURCES = frozenset({":::", "::::", ":::+", "::::+"})
# `{}`, `{.}`, `{/}`, `{1}`, ...: where parallel puts an input.
_PARALLEL_REPLACEMENT = re.compile(r"\{[^{}\s]*\}")
_SCRIPT_LONG_VALUES = _opts("log-in", "log-out", "log-io", "log-timing", "logging-format", "command", "echo",
                            "output-limit")  # fmt: skip
_SCRIPT_LONG_FLAGS = _opts("append", "return", "flush", "force", "quiet", "timing")
# What xargs and parallel add from their input: a word only known at run time.
_INPUT = Word("{input}", literal=False, plain=False)
# systemd unit properties that are commands (`-p ExecStartPre=...`).
_COMMAND_PROPERTIES = frozenset({"p", "property", "path-property", "socket-property", "timer-property"})


@dataclass(frozen=True)
class _Unwrapped:
    # Index of the wrapped command's first word; None when the wrapper runs nothing.
    start: int | None
    doubt: str | None = None
    # env -S: a command line to read, and where the words after it start.
    split: Word | None = None
    # An option said that nothing is run (`command -v`), as opposed to no command being there.
    stopped: bool = False
    # The options given, as (name, value): a letter or a long name, and the value's word if it took one.
    options: tuple[tuple[str, Word | None], ...] = ()


def _unwrap(program: str, words: Sequence[Word], spec: _Wrapper) -> _Unwrapped:
    """Where the command run by `program WORDS...` begins, following its option syntax."""
    options: list[tuple[str, Word | None]] = []
    i = 0
    if spec.leading_operands and words and not (words[0].literal and words[0].value.startswith("-")):
        i = spec.leading_operands
    while i < len(words):
        word = words[i]
        if not word.literal:
            # `nice $N rm`: an option or the command; bash decides at run time.
            return _Unwrapped(None, f"an option to {program} built at run time ({word.value})")
        text = word.value
        if text == "--":
            i += 1
            break
        if spec.assignments and _ASSIGNMENT.fullmatch(text):
            i += 1
            continue
        if text == "-" and spec.dash:
            i += 1
            continue
        if not text.startswith("-") or text == "-":
            break
        if spec.numeric and re.fullmatch(r"--?[0-9]+", text):
            i += 1
            continue
        if text.startswith("--"):
            name, eq, value = text[2:].partition("=")
            if name == spec.long_split and name:
                split = Word(value) if eq else (words[i + 1] if i + 1 < len(words) else None)
                return _Unwrapped(i + (1 if eq else 2), split=split or Word(""))
            if name in spec.long_stops:
                return _Unwrapped(None, stopped=True)
            if name in spec.long_values:
                given = Word(value) if eq else (words[i + 1] if i + 1 < len(words) else None)
                options.append((name, given))
                i += 1 if eq else 2
                continue
            if name in spec.long_flags or spec.long_single:
                options.append((name, Word(value) if eq else None))
                i += 1
                continue
            return _Unwrapped(None, f"an option of {program} it does not know ({text})")
        taken = 1
        for j, char in enumerate(text[1:], start=1):
            rest = text[j + 1 :]
            if char in spec.stops:
                return _Unwrapped(None, stopped=True)
            if char == spec.split and char:
                split = Word(rest) if rest else (words[i + 1] if i + 1 < len(words) else Word(""))
                return _Unwrapped(i + (1 if rest else 2), split=split)
            if char in spec.values:
                taken = 1 if rest else 2
                options.append((char, Word(rest) if rest else (words[i + 1] if i + 1 < len(words) else None)))
                break
            if char in spec.optional:
                options.append((char, Word(rest) if rest else None))
                break
            if char not in spec.flags:
                return _Unwrapped(None, f"an option of {program} it does not know ({text})")
            options.append((char, None))
        i += taken
    i += spec.operands
    return _Unwrapped(i if i < len(words) else None, options=tuple(options))


def _xargs_replace(options: Sequence[tuple[str, Word | None]]) -> str | None:
    """The replace string of `xargs -I R` / `-i` / `--replace`; "" when only known at run time."""
    replace: str | None = None
    for name, value in options:
        if name == "I":
            replace = value.value if value is not None and value.literal else ""
        elif name in ("i", "replace"):
            replace = "{}" if value is None else (value.value if value.literal else "")
    return replace


def _shell_script(words: Sequence[Word]) -> tuple[str, Word | None]:
    """For `bash [options] ...`: ("c", script), ("file", script), ("stdin", None) or ("doubt", word)."""
    i = 0
    command_string = False
    reads_stdin = False
    while i < len(words):
        word = words[i]
        if not word.literal:
            if command_string:
                # `sh -c "$CMD"`: the command string itself is only known at run time.
                break
            return ("doubt", word)
        text = word.value
        if text in ("-", "--"):
            i += 1
            break
        if text.startswith("--"):
            i += 2 if text in ("--rcfile", "--init-file") else 1
            continue
        if len(text) > 1 and text[0] in "-+":
            letters = text[1:]
            command_string = command_string or "c" in letters
            reads_stdin = reads_stdin or "s" in letters
            # -o and -O take the next word (`bash -o pipefail -c ...`).
            i += 1 + sum(1 for letter in letters if letter in "oO")
            continue
        break
    if command_string:
        return ("c", words[i] if i < len(words) else None)
    if i < len(words) and not reads_stdin:
        return ("file", words[i])
    return ("stdin", None)


# -- the reader -------------------------------------------------------------------------------

_STRUCTURE = frozenset(
    {"program", "list", "pipeline", "subshell", "do_group", "negated_command", "if_statement", "elif_clause",
     "else_clause", "while_statement", "case_statement", "case_item", "for_statement", "binary_expression",
     "unary_expression", "ternary_expression", "postfix_expression", "parenthesized_expression"}
)  # fmt: skip
_WORDS = frozenset(
    {"word", "number", "raw_string", "string", "translated_string", "ansi_c_string", "concatenation",
     "simple_expansion", "expansion", "command_substitution", "process_substitution", "arithmetic_expansion",
     "brace_expression", "array", "variable_name", "special_variable_name", "extglob_pattern", "regex",
     "test_operator", "string_content", "subscript"}
)  # fmt: skip
_REDIRECTS = frozenset({"file_redirect", "heredoc_redirect", "herestring_redirect"})
_QUIET = frozenset({"comment", "file_descriptor", "heredoc_start", "heredoc_end", "heredoc_content"})


@dataclass
class _Reader:
    depth: int = 0
    commands: list[SimpleCommand] = field(default_factory=list)
    embedded: list[SimpleCommand] = field(default_factory=list)
    doubts: list[str] = field(default_factory=list)
    writes_files: bool = False
    # The outermost script as read, line continuations removed.
    text: str = ""

    def doubt(self, why: str) -> None:
        if why not in self.doubts:
            self.doubts.append(why)

    # -- scripts

    def script(self, text: str) -> None:
        if self.depth > _MAX_DEPTH:
            self.doubt(f"command strings nested more than {_MAX_DEPTH} deep")
            return
        text, problem = join_continuations(text)
        if problem is not None:
            self.doubt(problem)
        if self.depth == 0:
            self.text = text
        try:
            source = text.encode("utf-8", "surrogatepass")
        except UnicodeEncodeError:
            self.doubt("text that is not valid Unicode")
            return
        root = _parser().parse(source).root_node
        if root.has_error:
            self.doubt("shell syntax the parser cannot read")
        self.node(root)

    def nested(self, text: str) -> None:
        """A command string that is run (bash -c, eval): what it runs, this line runs."""
        inner = _Reader(self.depth + 1)
        inner.script(text)
        self.commands += inner.commands
        self.embedded += inner.embedded
        self.writes_files = self.writes_files or inner.writes_files
        for why in inner.doubts:
            self.doubt(why)

    def maybe_code(self, text: str, *, always: bool = False) -> None:
        """Quoted text holding `$(` or a backtick may still be run (PS4, trap, arithmetic on it)."""
        if not (always or "$(" in text or "`" in text) or self.depth > _MAX_DEPTH:
            return
        inner = _Reader(self.depth + 1)
        inner.script(text)
        self.embedded += inner.commands + inner.embedded

    # -- statements

    def node(self, node: Node, stdin: str | None = None) -> None:
        kind = node.type
        if not node.is_named or kind in _QUIET:
            return
        if kind in _STRUCTURE or kind == "ERROR":
            # An ERROR is already a doubt (the root has an error); still read what it holds.
            self.children(node)
        elif kind == "command":
            self.command(node, stdin)
        elif kind == "redirected_statement":
            self.redirected(node)
        elif kind in ("declaration_command", "unset_command"):
            self.declaration(node)
        elif kind in ("variable_assignment", "variable_assignments"):
            self.assignments_alone(node)
        elif kind in _REDIRECTS:
            self.redirect(node)
        elif kind in _WORDS:
            self.word(node)
        elif kind == "compound_statement":
            if node.child_count and node.children[0].type == "((":
                self.arithmetic(node)
            self.children(node)
        elif kind == "c_style_for_statement":
            self.arithmetic(node)
            self.children(node)
        elif kind == "test_command":
            self.test(node)
            self.children(node)
        elif kind == "function_definition":
            self.doubt("a shell function defined in the command")
            self.children(node)
        else:
            self.doubt(f"shell syntax it does not follow ({kind})")
            self.children(node)

    def children(self, node: Node, stdin: str | None = None) -> None:
        for child in node.named_children:
            self.node(child, stdin)

    def redirected(self, node: Node) -> None:
        stdin: str | None = None
        bodies: list[Node] = []
        for index, child in enumerate(node.children):
            if node.field_name_for_child(index) == "body":
                bodies.append(child)
            elif child.type in _REDIRECTS:
                stdin = self.redirect(child) or stdin
            else:
                self.node(child)
        for body in bodies:
            self.node(body, stdin)

    def command(self, node: Node, stdin: str | None) -> None:
        assignments: list[str] = []
        words: list[Word] = []
        for child in node.named_children:
            if child.type == "variable_assignment":
                self.assignment_value(child)
                assignments.append(_squash(_text(child)))
            elif child.type in _REDIRECTS:
                stdin = self.redirect(child) or stdin
            elif child.type == "command_name":
                words += [self.word(part) for part in child.named_children]
            elif child.type not in _QUIET:
                words.append(self.word(child))
        self.run(SimpleCommand(tuple(words), tuple(assignments), _squash(_text(node))), stdin)

    def declaration(self, node: Node) -> None:
        # `export A=1 B`, `local -r x`, `unset f`: a command named by its keyword.
        words = [Word(node.children[0].type)] if node.child_count else []
        for child in node.named_children:
            if child.type == "variable_assignment":
                self.assignment_value(child)
                words.append(Word(_squash(_text(child))))
            else:
                words.append(self.word(child))
        if (
            words
            and words[0].value in ("declare", "typeset", "local")
            and any(w.literal and w.value.startswith("-") and "i" in w.value for w in words[1:])
        ):
            self.doubt("an integer variable (its values are evaluated as arithmetic)")
        self.commands.append(SimpleCommand(tuple(words), (), _squash(_text(node))))

    def assignments_alone(self, node: Node) -> None:
        parts = [node] if node.type == "variable_assignment" else list(node.named_children)
        for part in parts:
            self.assignment_value(part)
        # A bare `PATH=...` changes what later commands run, so it is a command of its own for allow rules.
        self.commands.append(SimpleCommand((), tuple(_squash(_text(p)) for p in parts), _squash(_text(node))))

    def assignment_value(self, node: Node) -> None:
        for index, child in enumerate(node.children):
            field_name = node.field_name_for_child(index)
            if field_name == "value":
                self.word(child)
            elif field_name == "name" and child.type == "subscript":
                self.subscript(child)

    def redirect(self, node: Node) -> str | None:
        """Note writes into files; return the literal text fed to standard input, if any."""
        if node.type == "herestring_redirect":
            words = [self.word(child) for child in node.named_children]
            return words[-1].value + "\n" if words and words[-1].literal else None
        if node.type == "heredoc_redirect":
            return self.heredoc(node)
        operator = "".join(c.type for c in node.children if not c.is_named)
        targets = [self.word(child) for child in node.children_by_field_name("destination")]
        target = targets[0] if targets else Word("")
        if operator in _WRITE_REDIRECTS:
            if not (target.literal and target.value == "/dev/null"):
                self.writes_files = True
        elif operator in (">&", "<&") and not (target.literal and (target.value.isdigit() or target.value == "-")):
            # `>&file` is `&>file`.
            self.writes_files = self.writes_files or operator == ">&"
        elif operator not in ("<", "<&", ">&", "<&-", ">&-"):
            self.doubt(f"a redirection it does not follow ({operator})")
        return None

    def heredoc(self, node: Node) -> str | None:
        start = next((c for c in node.children if c.type == "heredoc_start"), None)
        quoted = start is not None and any(q in _text(start) for q in "'\"\\")
        body: str | None = ""
        for child in node.named_children:
            if child.type == "heredoc_body":
                body = _text(child) if quoted else self.heredoc_body(child)
            elif child.type not in _QUIET:
                # `cat <<EOF | grep x`: the rest of the line hangs off the redirection.
                self.node(child)
        return body

    def heredoc_body(self, node: Node) -> str | None:
        literal = True
        for child in node.named_children:
            if child.type == "heredoc_content":
                if _hides_substitution(_text(child)):
                    self.doubt("a here-document with command substitution")
                    self.maybe_code(_text(child), always=True)
                    literal = False
                continue
            literal = False
            if child.type in ("command_substitution", "arithmetic_expansion", "process_substitution"):
                self.doubt("a here-document with command substitution")
            self.word(child)
        return _text(node) if literal else None

    def arithmetic(self, node: Node) -> None:
        if any(_names_variable(d) for d in _descendants(node)):
            self.doubt("arithmetic on variables (their values can hide commands)")

    def test(self, node: Node) -> None:
        # Only `[[ ]]` evaluates the operands of -eq and friends as arithmetic; `[` compares numbers.
        if not node.child_count or node.children[0].type != "[[":
            return
        descendants = list(_descendants(node))
        arithmetic = any(d.type == "test_operator" and _text(d) in _ARITHMETIC_TESTS for d in descendants)
        if arithmetic and any(_names_variable(d) for d in descendants):
            self.doubt("arithmetic on variables (their values can hide commands)")

    def subscript(self, node: Node) -> None:
        index = node.child_by_field_name("index")
        if index is not None and not (index.type == "number" or _text(index) in ("@", "*")):
            self.doubt("an array subscript (evaluated as arithmetic)")
        self.children(node)

    # -- words

    def word(self, node: Node) -> Word:
        kind = node.type
        text = _text(node)
        if kind in ("word", "regex", "extglob_pattern") and _hides_substitution(text):
            # tree-sitter leaves some substitutions as plain text (`${x:-`cmd`}`); bash would run them.
            self.doubt(f"a substitution the parser did not separate ({_short(text)})")
            self.maybe_code(text, always=True)
            return Word(text, literal=False, plain=False)
        if kind == "word":
            if "\n" in text:
                # bash ends an unquoted word at a newline; tree-sitter can glue the next line on
                # (after a comment that ends in a backslash), hiding the command that line runs.
                self.doubt(f"a word the parser read across a line break ({_short(text)})")
                self.maybe_code(text, always=True)
                return Word(text, literal=False, plain=False)
            value, unquoted = _unescape(text)
            return Word(
                value, literal=not _BRACE_EXPANSION.search(unquoted), plain=value == text,
                globbing=any(c in unquoted for c in "*?["),
            )  # fmt: skip
        if kind in ("number", "variable_name", "special_variable_name", "test_operator", "regex", "extglob_pattern"):
            return Word(text)
        if kind == "raw_string":
            value = text[1:-1]
            self.maybe_code(value)
            return Word(value, plain=False)
        if kind in ("string", "translated_string"):
            return self.double_quoted(node)
        if kind == "ansi_c_string":
            decoded = _ansi_c(text[2:-1])
            if decoded is None:
                return Word(text, literal=False, plain=False)
            self.maybe_code(decoded)
            return Word(decoded, plain=False)
        if kind == "concatenation":
            return self.concatenation(node)
        if kind == "expansion":
            if not _PLAIN_EXPANSION.match(text):
                self.doubt(f"a parameter expansion it cannot follow ({_short(text)})")
            for child in node.named_children:
                if child.type == "subscript":
                    self.subscript(child)
                else:
                    self.word(child)
        elif kind == "process_substitution":
            self.doubt("a process substitution")
            self.children(node)
        elif kind == "arithmetic_expansion":
            self.arithmetic(node)
            self.children(node)
        elif kind == "subscript":
            self.subscript(node)
        elif kind != "simple_expansion":
            # Command substitutions, arrays, brace patterns: read what is inside for commands.
            self.children(node)
        return Word(text, literal=False, plain=False)

    def double_quoted(self, node: Node) -> Word:
        parts: list[str] = []
        literal = True
        for child in node.named_children:
            if child.type == "string_content":
                if _hides_substitution(_text(child)):
                    self.doubt(f"a substitution the parser did not separate ({_short(_text(child))})")
                    self.maybe_code(_text(child), always=True)
                    literal = False
                parts.append(_unescape_double(_text(child)))
            elif child.type == "string":
                inner = self.double_quoted(child)
                literal = literal and inner.literal
                parts.append(inner.value)
            else:
                literal = False
                self.word(child)
        if not literal:
            return Word(_text(node), literal=False, plain=False)
        value = "".join(parts)
        self.maybe_code(value)
        return Word(value, plain=False)

    def concatenation(self, node: Node) -> Word:
        parts = [(child, self.word(child)) for child in node.named_children]
        literal = all(word.literal for _, word in parts)
        # Brace expansion can span parts (`{a,b}` parses as three words); check the unquoted text.
        unquoted = "".join(_unescape(_text(c))[1] if c.type == "word" else "\x00" for c, _ in parts)
        if _BRACE_EXPANSION.search(unquoted) or not literal:
            return Word(_text(node), literal=False, plain=False)
        value = "".join(word.value for _, word in parts)
        return Word(value, plain=all(word.plain for _, word in parts), globbing=any(word.globbing for _, word in parts))

    # -- what a command runs

    def run(self, command: SimpleCommand, stdin: str | None = None, level: int = 0) -> None:
        self.commands.append(command)
        name = command.name
        if name is None:
            return
        if not name.literal:
            self.doubt(f"a command name built at run time ({_short(name.value)})")
            return
        if name.globbing:
            self.doubt(f"a glob as the command name ({_short(name.value)})")
            return
        if name.value in _RESERVED:
            self.doubt(f"shell syntax the parser may have misread ({name.value})")
            return
        if level > _MAX_DEPTH:
            self.doubt(f"wrappers nested more than {_MAX_DEPTH} deep")
            return
        program = posixpath.basename(name.value)
        args = command.words[1:]
        if name.value == "coproc":
            # `coproc NAME { ...; }` is parsed as words; the command may start at either word.
            self.doubt("a coprocess")
            for start in (0, 1):
                if start < len(args):
                    self.run(_command(args[start:]), None, level + 1)
        elif program in _SHELLS:
            self.shell(args, stdin)
        elif program in ("source", "."):
            shown = _short(args[0].value) if args else "no file"
            self.doubt(f"`{program}` runs the commands in a file ({shown}), which it does not read")
        elif program == "eval":
            self.eval(args)
        elif program == "trap":
            self.trap(args)
        elif program in ("su", "runuser"):
            self.su(program, args, level)
        elif program == "sg":
            self.sg(args)
        elif program == "newgrp":
            self.doubt("newgrp starts a shell that reads commands from standard input")
        elif program == "script":
            self.script_command(args)
        elif program == "parallel":
            self.parallel(args, level)
        elif program == "find":
            for words in _find_exec(args):
                self.run(_command(words), None, level + 1)
        elif program == "let":
            self.doubt("arithmetic on variables (their values can hide commands)")
        elif program in ("mapfile", "readarray") and any(w.value.startswith("-") and "C" in w.value for w in args):
            self.doubt(f"a {program} callback")
        elif program == "alias":
            self.doubt("an alias definition")
        elif program in _WRAPPERS:
            self.wrapped(program, args, stdin, level)

    def wrapped(
        self, program: str, args: tuple[Word, ...], stdin: str | None, level: int, spec: _Wrapper | None = None
    ) -> None:
        spec = spec or _WRAPPERS[program]
        found = _unwrap(program, args, spec)
        if found.split is not None:
            # env -S 'rm -rf x' y: the string is split into words that come before the rest.
            if not found.split.literal:
                self.doubt(f"a command string built at run time ({_short(found.split.value)})")
                return
            rest = args[found.start :] if found.start is not None else ()
            self.nested(" ".join([found.split.value, *(w.render() for w in rest)]))
            return
        if found.doubt is not None:
            self.doubt(found.doubt)
            self.any_later_word(args)
            return
        self.option_commands(program, found.options)
        if found.start is None:
            shell = not spec.shell_options or any(name in spec.shell_options for name, _ in found.options)
            if spec.bare_shell and shell and not found.stopped:
                self.doubt(f"{program} without a command starts a shell that reads commands from standard input")
            return
        rest = args[found.start :]
        if rest and rest[0].literal and rest[0].value in spec.command_string:
            # flock FILE -c 'command': the string goes to `sh -c`.
            self.command_string(rest[1] if len(rest) > 1 else None, program)
            return
        if spec.joined and not any(name in spec.exec_options for name, _ in found.options):
            # watch 'ls; df': the words are joined and run by `sh -c`.
            self.joined(rest, program)
            return
        if program == "xargs":
            self.xargs(rest, found.options, level)
            return
        self.run(_command(rest), stdin, level + 1)

    def any_later_word(self, args: Sequence[Word]) -> None:
        # The command could start at any later word; deny rules get to see each of them. They are
        # not followed further: that could branch at every word, and allow rules are off anyway.
        for index in range(1, len(args)):
            if args[index].literal and not args[index].value.startswith("-"):
                self.commands.append(_command(args[index:]))

    def option_commands(self, program: str, options: Sequence[tuple[str, Word | None]]) -> None:
        """Options whose value is a command: strace -o '|cmd', systemd-run -p ExecStartPre=cmd, firejail --shell."""
        for name, value in options:
            text = value.value if value is not None and value.literal else None
            if program == "strace" and name in ("o", "output") and value is not None:
                if text is None:
                    self.doubt(f"an output file of strace built at run time ({_short(value.value)})")
                elif text[:1] in ("|", "!"):
                    self.nested(text[1:])
            elif program == "systemd-run" and name in _COMMAND_PROPERTIES and value is not None:
                if text is None or text.lower().startswith("exec"):
                    self.doubt(f"a unit property that may run a command ({_short(value.value)})")
            elif program == "firejail" and name == "shell" and (text or "").lower() != "none":
                self.doubt("firejail running its command through a shell")

    def command_string(self, script: Word | None, program: str) -> None:
        if script is None:
            self.doubt(f"{program} without its command string")
        elif script.literal:
            self.nested(script.value)
        else:
            self.doubt(f"a command string built at run time ({_short(script.value)})")

    def joined(self, words: Sequence[Word], program: str) -> None:
        if all(word.literal for word in words):
            self.nested(" ".join(word.value for word in words))
        else:
            self.doubt(f"a command for {program} built at run time")

    def xargs(self, words: tuple[Word, ...], options: Sequence[tuple[str, Word | None]], level: int) -> None:
        """xargs adds words from its input to the command: holes, which rules treat as unknown."""
        replace = _xargs_replace(options)
        if replace is not None:
            # -I{}: each word holding {} gets text from the input (`sh -c {}` runs the input).
            holes = tuple(Word(w.value, literal=False, plain=False) if replace in w.value else w for w in words)
        else:
            # The words read from the input come after the command's own (`xargs sh -c` runs them).
            holes = (*words, _INPUT)
        if holes != words:
            # Also the command as written, for the rules that name it (`xargs sudo rm -rf x`).
            self.run(_command(words), None, level + 1)
        self.run(_command(holes), None, level + 1)

    def parallel(self, args: tuple[Word, ...], level: int) -> None:
        """GNU parallel: the command's words are joined and run by a shell, with the inputs put in."""
        found = _unwrap("parallel", args, _PARALLEL)
        end = next((i for i, w in enumerate(args) if w.literal and w.value in _PARALLEL_SOURCES), len(args))
        if found.doubt is not None:
            self.doubt(found.doubt)
            self.any_later_word(args[:end])
            return
        if found.stopped:
            return
        start = found.start if found.start is not None and found.start < end else end
        words = args[start:end]
        if not words:
            self.doubt("parallel running its inputs as commands")
            for word in args[end:]:
                if word.literal and word.value not in _PARALLEL_SOURCES:
                    self.nested(word.value)
            return
        if any(name in ("q", "quote") for name, _ in found.options):
            # -q: the words are run as they are, not through a shell.
            self.run(_command((*words, _INPUT)), None, level + 1)
            return
        if not all(word.literal for word in words):
            self.doubt("a command for parallel built at run time")
            return
        text = " ".join(word.value for word in words)
        if "{=" in text:
            self.doubt("a parallel replacement string with Perl code")
            return
        # Each input is put in where a replacement string is, or after the command: a hole.
        filled, count = _PARALLEL_REPLACEMENT.subn('"$PARALLEL_INPUT"', text)
        self.nested(filled if count else f'{text} "$PARALLEL_INPUT"')

    def shell(self, args: tuple[Word, ...], stdin: str | None) -> None:
        how, script = _shell_script(args)
        if how == "c":
            self.command_string(script, "a shell's -c")
        elif how == "doubt" and script is not None:
            self.doubt(f"a shell option built at run time ({_short(script.value)})")
        elif how == "file" and script is not None and script.literal and script.value in _STDIN_FILES:
            how = "stdin"
        elif how == "file":
            shown = _short(script.value) if script is not None else "no file"
            self.doubt(f"a shell running a script file ({shown}), which it does not read")
        if how == "stdin":
            if stdin is None:
                self.doubt("a shell reading commands from standard input")
            else:
                self.nested(stdin)

    def eval(self, args: tuple[Word, ...]) -> None:
        if all(word.literal for word in args):
            self.nested(" ".join(word.value for word in args))
        else:
            self.doubt("eval of text built at run time")

    def trap(self, args: tuple[Word, ...]) -> None:
        words = list(args[1:] if args and args[0].value == "--" else args)
        if len(words) < 2 or (words[0].literal and words[0].value.startswith("-")):
            return
        if words[0].literal:
            self.nested(words[0].value)
        else:
            self.doubt("a trap command built at run time")

    def su(self, program: str, args: tuple[Word, ...], level: int) -> None:
        """su and runuser: `-c CMD` goes to the user's shell; runuser `-u USER CMD...` runs CMD."""
        found = False
        for index, word in enumerate(args):
            value = word.value if word.literal else ""
            script: Word | None = None
            if value in ("-c", "--command", "--session-command") and index + 1 < len(args):
                script = args[index + 1]
            elif value.startswith(("--command=", "--session-command=")):
                script = Word(value.partition("=")[2])
            elif value.startswith("-c") and len(value) > 2:
                script = Word(value[2:])
            if script is not None:
                found = True
                self.command_string(script, program)
        if found:
            return
        if program == "runuser" and any(w.literal and w.value.startswith(("-u", "--user")) for w in args):
            self.wrapped(program, args, None, level, _RUNUSER)
            return
        if not any(w.literal and w.value in ("-h", "--help", "-V", "--version") for w in args):
            self.doubt(f"{program} without -c starts a shell that reads commands from standard input")

    def sg(self, args: tuple[Word, ...]) -> None:
        """`sg [-] GROUP [-c] COMMAND [ARG...]`: COMMAND goes to `sh -c`."""
        words = list(args)
        if words and words[0].literal and words[0].value in ("-h", "--help"):
            return
        if words and words[0].literal and words[0].value == "-":
            words.pop(0)
        words = words[1:]
        if words and words[0].literal and words[0].value == "-c":
            words.pop(0)
        if not words:
            self.doubt("sg without a command starts a shell that reads commands from standard input")
            return
        self.command_string(words[0], "sg")

    def script_command(self, args: tuple[Word, ...]) -> None:
        """script(1): `-c CMD` goes to the shell; without it, an interactive shell reads standard input."""
        commands: list[Word | None] = []
        i = 0
        while i < len(args):
            word = args[i]
            if not word.literal:
                i += 1
                continue
            text = word.value
            if text == "--":
                break
            if text.startswith("--"):
                name, eq, value = text[2:].partition("=")
                if name in ("help", "version"):
                    return
                if name in _SCRIPT_LONG_VALUES:
                    given = Word(value) if eq else (args[i + 1] if i + 1 < len(args) else None)
                    if name == "command":
                        commands.append(given)
                    i += 1 if eq else 2
                    continue
                if name not in _SCRIPT_LONG_FLAGS:
                    self.doubt(f"an option of script it does not know ({text})")
                    self.any_later_word(args)
                    return
                i += 1
                continue
            if text.startswith("-") and text != "-":
                taken = 1
                for j, char in enumerate(text[1:], start=1):
                    rest = text[j + 1 :]
                    if char in "hV":
                        return
                    if char in "cIOBTmEo":
                        given = Word(rest) if rest else (args[i + 1] if i + 1 < len(args) else None)
                        if char == "c":
                            commands.append(given)
                        taken = 1 if rest else 2
                        break
                    if char == "t":
                        break
                    if char not in "aefqw":
                        self.doubt(f"an option of script it does not know ({text})")
                        self.any_later_word(args)
                        return
                i += taken
                continue
            i += 1
        if not commands:
            self.doubt("script without -c starts a shell that reads commands from standard input")
        for command in commands:
            self.command_string(command, "script")


# -- helpers ----------------------------------------------------------------------------------


@lru_cache(maxsize=1)
def _parser() -> Parser:
    return Parser(Language(tree_sitter_bash.language()))


def _text(node: Node) -> str:
    return (node.text or b"").decode("utf-8", "surrogatepass")


def _squash(text: str) -> str:
    return " ".join(text.split())


def _short(text: str) -> str:
    text = _squash(text)
    return text if len(text) <= 40 else text[:37] + "..."


def _descendants(node: Node) -> Iterator[Node]:
    for child in node.named_children:
        yield child
        yield from _descendants(child)


def _names_variable(node: Node) -> bool:
    """A named variable (`x`, `$x`, `${x}`); `$?`, `$#` and friends only ever hold plain values here."""
    if node.type == "variable_name":
        return True
    if node.type in ("simple_expansion", "expansion"):
        return not any(child.type == "special_variable_name" for child in node.named_children)
    return False


def _command(words: Sequence[Word]) -> SimpleCommand:
    """A wrapped command; leading `NAME=value` words count as assignments (sudo and env take them)."""
    split = 0
    while split < len(words) - 1 and words[split].literal and _ASSIGNMENT.fullmatch(words[split].value):
        split += 1
    source = " ".join(word.render() for word in words)
    return SimpleCommand(tuple(words[split:]), tuple(w.render() for w in words[:split]), source)


def _find_exec(args: Sequence[Word]) -> Iterator[tuple[Word, ...]]:
    """`find . -exec rm -rf {} ;`: the commands after -exec, -execdir, -ok and -okdir."""
    index = 0
    while index < len(args):
        if args[index].value in ("-exec", "-execdir", "-ok", "-okdir"):
            end = index + 1
            while end < len(args) and args[end].value not in (";", "+"):
                end += 1
            if end > index + 1:
                yield tuple(args[index + 1 : end])
            index = end
        index += 1


def _hides_substitution(text: str) -> bool:
    """Unescaped substitution syntax left inside a node the parser calls plain text."""
    i = 0
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text[i] == "`" or text.startswith(("$(", "$[", "${"), i):
            return True
        i += 1
    return False


def _unescape(text: str) -> tuple[str, str]:
    """Backslash removal in an unquoted word: (value, unquoted chars with escaped ones as NUL)."""
    value: list[str] = []
    unquoted: list[str] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char == "\\" and i + 1 < len(text):
            if text[i + 1] != "\n":
                value.append(text[i + 1])
                unquoted.append("\x00")
            i += 2
            continue
        value.append(char)
        unquoted.append(char)
        i += 1
    return "".join(value), "".join(unquoted)


def _unescape_double(text: str) -> str:
    # Inside double quotes a backslash only escapes $ ` " \ and newline.
    return re.sub(r'\\([$`"\\\n])', lambda m: "" if m.group(1) == "\n" else m.group(1), text)


def _ansi_c(body: str) -> str | None:
    """Decode `$'...'`; None for escapes it does not know (`\\cX`), which then count as holes."""
    out: list[str] = []
    i = 0
    while i < len(body):
        char = body[i]
        if char != "\\" or i + 1 >= len(body):
            out.append(char)
            i += 1
            continue
        code = body[i + 1]
        if code in _ANSI_C_ESCAPES:
            out.append(_ANSI_C_ESCAPES[code])
            i += 2
            continue
        number = re.match(r"[0-7]{1,3}|x[0-9A-Fa-f]{1,2}|u[0-9A-Fa-f]{1,4}|U[0-9A-Fa-f]{1,8}", body[i + 1 :])
        if number is None:
            return None
        digits = number.group()
        value = int(digits, 8) if digits[0] in "01234567" else int(digits[1:], 16)
        if value == 0:
            # bash stops the string at a NUL.
            break
        try:
            out.append(chr(value))
        except ValueError:
            return None
        i += 1 + len(digits)
    return "".join(out)


# -- line continuations -----------------------------------------------------------------------

_CONTINUATION = "\\\n"
# After these a `#` starts a comment.
_WORD_BREAKS = frozenset(" \t\n;&|()<>")
# Where bash keeps a backslash-newline as it is (tree-sitter's names for those places).
_KEEPS_CONTINUATION = frozenset({"raw_string", "ansi_c_string", "comment"})


def join_continuations(text: str) -> tuple[str, str | None]:
    """The command with its line continuations removed as bash removes them, and a doubt if any.

    bash drops every backslash-newline before it splits the line into words, except inside
    single quotes, `$'...'`, comments and here-documents with a quoted delimiter; tree-sitter
    instead ends a word there (`r\\<newline>m` would be two words, where bash runs `rm`). The
    places are found by a small scanner of bash's quoting and checked against tree-sitter's
    reading of the same text: where the two disagree, or the scanner is unsure (a continuation
    in a here-document's body or delimiter), the result comes with a doubt.
    """
    if _CONTINUATION not in text:
        return text, None
    scan = _ContinuationScanner(text)
    scan.run()
    doubt = scan.doubt or _parser_disagrees(text, scan.kept, scan.removed)
    return "".join(scan.out), doubt


@dataclass
class _Frame:
    # N: unquoted (top level or inside `$(`), S: '...', A: $'...', D: "...", B: `...`,
    # E: ${...} unquoted, F: ${...} inside double quotes, C: a comment.
    mode: str
    # Open parentheses inside `$(`, to find its end.
    depth: int = 0
    substitution: bool = False


@dataclass
class _Heredoc:
    delimiter: str
    quoted: bool
    strip_tabs: bool


class _ContinuationScanner:
    def __init__(self, text: str) -> None:
        self.text = text
        self.out: list[str] = []
        self.kept: list[int] = []
        self.removed: list[int] = []
        self.doubt: str | None = None
        self.stack = [_Frame("N")]
        self.pending: list[_Heredoc] = []

    def run(self) -> None:
        text = self.text
        i = 0
        while i < len(text):
            i = self.step(i)

    def emit(self, start: int, end: int) -> int:
        self.out.append(self.text[start:end])
        return end

    def step(self, i: int) -> int:
        text, frame = self.text, self.stack[-1]
        char = text[i]
        two = text[i : i + 2]
        mode = frame.mode
        if mode == "S":
            if char == "'":
                self.stack.pop()
            elif two == _CONTINUATION:
                self.kept.append(i)
            return self.emit(i, i + 1)
        if mode == "C":
            if char == "\n":
                self.stack.pop()
                return i
            if two == _CONTINUATION:
                self.kept.append(i)
            return self.emit(i, i + 1)
        if mode == "A":
            if char == "\\":
                if two == _CONTINUATION:
                    self.kept.append(i)
                return self.emit(i, i + 2)
            if char == "'":
                self.stack.pop()
            return self.emit(i, i + 1)
        if char == "\\":
            if two == _CONTINUATION:
                self.removed.append(i)
                return i + 2
            return self.emit(i, i + 2)
        if mode == "B":
            if char == "`":
                self.stack.pop()
            return self.emit(i, i + 1)
        if two in ("$(", "${"):
            self.stack.append(_Frame("N", substitution=True) if two == "$(" else _Frame("F" if mode in "DF" else "E"))
            return self.emit(i, i + 2)
        if char == "`":
            self.stack.append(_Frame("B"))
            return self.emit(i, i + 1)
        if char == '"':
            if mode == "D":
                self.stack.pop()
            else:
                self.stack.append(_Frame("D"))
            return self.emit(i, i + 1)
        if mode == "D":
            return self.emit(i, i + 1)
        if mode in "EF" and char == "}":
            self.stack.pop()
            return self.emit(i, i + 1)
        if mode == "F":
            # Inside "${...}" single quotes are plain characters.
            return self.emit(i, i + 1)
        if two == "$'":
            self.stack.append(_Frame("A"))
            return self.emit(i, i + 2)
        if char == "'":
            self.stack.append(_Frame("S"))
            return self.emit(i, i + 1)
        if mode == "E":
            return self.emit(i, i + 1)
        # Unquoted text.
        if char == "(" and frame.substitution:
            frame.depth += 1
        elif char == ")" and frame.substitution:
            if frame.depth == 0:
                self.stack.pop()
            else:
                frame.depth -= 1
        elif char == "#" and (not self.out or self.out[-1][-1:] in _WORD_BREAKS):
            self.stack.append(_Frame("C"))
        elif text.startswith("<<", i) and not text.startswith("<<<", i) and (i == 0 or text[i - 1] != "<"):
            self.heredoc_start(i)
            return self.emit(i, i + 2)
        elif char == "\n" and self.pending:
            return self.heredoc_bodies(i + 1)
        return self.emit(i, i + 1)

    def heredoc_start(self, i: int) -> None:
        text = self.text
        j = i + 2
        strip_tabs = text.startswith("-", j)
        j += strip_tabs
        while j < len(text) and text[j] in " \t":
            j += 1
        word: list[str] = []
        quoted = False
        quote = ""
        while j < len(text):
            char = text[j]
            if text.startswith(_CONTINUATION, j):
                self.doubt = "a line continuation in a here-document delimiter"
            if quote:
                if char == quote:
                    quote = ""
                else:
                    word.append(char)
            elif char in "'\"":
                quote, quoted = char, True
            elif char == "\\" and j + 1 < len(text):
                quoted = True
                word.append(text[j + 1])
                j += 1
            elif char in " \t\n;&|<>()":
                break
            else:
                word.append(char)
            j += 1
        self.pending.append(_Heredoc("".join(word), quoted, strip_tabs))

    def heredoc_bodies(self, start: int) -> int:
        """After the newline that ends the line with `<<`: copy each pending body to its delimiter."""
        text = self.text
        self.out.append("\n")
        i = start
        for heredoc in self.pending:
            while i < len(text):
                end = text.find("\n", i)
                end = len(text) if end < 0 else end
                line = text[i:end]
                if (line.lstrip("\t") if heredoc.strip_tabs else line) == heredoc.delimiter:
                    i = self.emit(i, min(end + 1, len(text)))
                    break
                escaped = len(line) - len(line.rstrip("\\"))
                if end < len(text) and escaped % 2 == 1:
                    if heredoc.quoted:
                        self.kept.append(end - 1)
                        i = self.emit(i, end + 1)
                    else:
                        # bash joins the lines, which also changes where the body may end.
                        self.doubt = "a line continuation in a here-document"
                        self.removed.append(end - 1)
                        self.emit(i, end - 1)
                        i = end + 1
                    continue
                i = self.emit(i, min(end + 1, len(text)))
        self.pending = []
        return i


def _parser_disagrees(text: str, kept: Sequence[int], removed: Sequence[int]) -> str | None:
    """Whether tree-sitter puts a continuation the scanner placed somewhere else (quoted or not)."""
    try:
        source = text.encode("utf-8", "surrogatepass")
    except UnicodeEncodeError:
        return None
    root = _parser().parse(source).root_node
    keeps = set(kept)
    for index in sorted((*kept, *removed)):
        offset = len(text[:index].encode("utf-8", "surrogatepass"))
        node: Node | None = root.descendant_for_byte_range(offset, offset + 1)
        protected = False
        while node is not None:
            if node.type in _KEEPS_CONTINUATION or (node.type == "heredoc_body" and _quoted_heredoc(node)):
                protected = True
                break
            node = node.parent
        if protected != (index in keeps):
            return "a line continuation whose quoting it cannot place"
    return None


def _quoted_heredoc(body: Node) -> bool:
    parent = body.parent
    starts = [c for c in parent.children if c.type == "heredoc_start"] if parent is not None else []
    return any(q in _text(start) for start in starts for q in "'\"\\")
