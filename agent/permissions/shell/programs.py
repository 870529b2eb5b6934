"""What a simple command runs: the commands behind wrappers, shells, eval and their kin.

`sudo rm x` runs sudo and rm; `bash -c 'rm x'` and `eval 'rm x'` run what their string says;
`xargs rm` runs rm with words from its input (holes); `find -exec`, `trap`, `su -c`, `parallel`
and `watch` run commands too. Commands whose text is only there at run time are doubts: a shell
given a script file (`bash x.sh`, `source x.sh`) or standard input it cannot see (`... | bash
/dev/stdin`, `xargs sh -c`), and wrappers that start a shell with no command.
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence

from agent.permissions.shell.options import (
    Option,
    Unwrapped,
    find_exec,
    read_option,
    shell_script,
    unwrap,
    xargs_replace,
)
from agent.permissions.shell.syntax import MAX_DEPTH, SyntaxReader
from agent.permissions.shell.words import ASSIGNMENT, SimpleCommand, Word, short
from agent.permissions.shell.wrappers import (
    COMMAND_PROPERTIES,
    PARALLEL,
    PARALLEL_REPLACEMENT,
    PARALLEL_SOURCES,
    RUNUSER,
    SCRIPT,
    WRAPPERS,
    Wrapper,
)

__all__ = ["CommandReader"]

# Anything run through these reads the next argument (after -c) as a script.
_SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh", "mksh", "ash", "yash", "fish", "csh", "tcsh"})
# A script file that is standard input (`printf ... | bash /dev/stdin`).
_STDIN_FILES = frozenset({"/dev/stdin", "/dev/fd/0", "/proc/self/fd/0"})
# Reserved words never name a command; seeing one as a name means the parse went wrong.
_RESERVED = frozenset(
    {"{", "}", "(", ")", "!", "then", "fi", "do", "done", "esac", "in", "elif", "else", "if", "while", "until",
     "for", "case", "select", "function", "[[", "]]"}
)  # fmt: skip
# What xargs and parallel add from their input: a word only known at run time.
_INPUT = Word("{input}", literal=False, plain=False)


class CommandReader(SyntaxReader):
    """A syntax reader that also follows what each simple command runs."""

    def run(self, command: SimpleCommand, stdin: str | None = None, level: int = 0) -> None:
        super().run(command, stdin, level)
        name = command.name
        if name is None:
            return
        if not name.literal:
            self.doubt(f"a command name built at run time ({short(name.value)})")
            return
        if name.globbing:
            self.doubt(f"a glob as the command name ({short(name.value)})")
            return
        if name.value in _RESERVED:
            self.doubt(f"shell syntax the parser may have misread ({name.value})")
            return
        if level > MAX_DEPTH:
            self.doubt(f"wrappers nested more than {MAX_DEPTH} deep")
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
            shown = short(args[0].value) if args else "no file"
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
            for words in find_exec(args):
                self.run(_command(words), None, level + 1)
        elif program == "let":
            self.doubt("arithmetic on variables (their values can hide commands)")
        elif program in ("mapfile", "readarray") and any(w.value.startswith("-") and "C" in w.value for w in args):
            self.doubt(f"a {program} callback")
        elif program == "alias":
            self.doubt("an alias definition")
        elif program in WRAPPERS:
            self.wrapped(program, args, stdin, level)

    def wrapped(
        self, program: str, args: tuple[Word, ...], stdin: str | None, level: int, spec: Wrapper | None = None
    ) -> None:
        spec = spec or WRAPPERS[program]
        found = unwrap(program, args, spec)
        if found.split is not None:
            # env -S 'rm -rf x' y: the string is split into words that come before the rest.
            if not found.split.literal:
                self.doubt(f"a command string built at run time ({short(found.split.value)})")
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
            self.joined(rest, f"a command for {program} built at run time")
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

    def option_commands(self, program: str, options: Sequence[Option]) -> None:
        """Options whose value is a command: strace -o '|cmd', systemd-run -p ExecStartPre=cmd, firejail --shell."""
        for name, value in options:
            text = value.value if value is not None and value.literal else None
            if program == "strace" and name in ("o", "output") and value is not None:
                if text is None:
                    self.doubt(f"an output file of strace built at run time ({short(value.value)})")
                elif text[:1] in ("|", "!"):
                    self.nested(text[1:])
            elif program == "systemd-run" and name in COMMAND_PROPERTIES and value is not None:
                if text is None or text.lower().startswith("exec"):
                    self.doubt(f"a unit property that may run a command ({short(value.value)})")
            elif program == "firejail" and name == "shell" and (text or "").lower() != "none":
                self.doubt("firejail running its command through a shell")

    def command_string(self, script: Word | None, program: str) -> None:
        if script is None:
            self.doubt(f"{program} without its command string")
        elif script.literal:
            self.nested(script.value)
        else:
            self.doubt(f"a command string built at run time ({short(script.value)})")

    def joined(self, words: Sequence[Word], doubt: str) -> None:
        """Words joined into one command string and run by a shell; `doubt` when one is a hole."""
        if all(word.literal for word in words):
            self.nested(" ".join(word.value for word in words))
        else:
            self.doubt(doubt)

    def xargs(self, words: tuple[Word, ...], options: Sequence[Option], level: int) -> None:
        """xargs adds words from its input to the command: holes, which rules treat as unknown."""
        replace = xargs_replace(options)
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
        found = unwrap("parallel", args, PARALLEL)
        end = next((i for i, w in enumerate(args) if w.literal and w.value in PARALLEL_SOURCES), len(args))
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
                if word.literal and word.value not in PARALLEL_SOURCES:
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
        filled, count = PARALLEL_REPLACEMENT.subn('"$PARALLEL_INPUT"', text)
        self.nested(filled if count else f'{text} "$PARALLEL_INPUT"')

    def shell(self, args: tuple[Word, ...], stdin: str | None) -> None:
        how, script = shell_script(args)
        if how == "c":
            self.command_string(script, "a shell's -c")
        elif how == "doubt" and script is not None:
            self.doubt(f"a shell option built at run time ({short(script.value)})")
        elif how == "file" and script is not None and script.literal and script.value in _STDIN_FILES:
            how = "stdin"
        elif how == "file":
            shown = short(script.value) if script is not None else "no file"
            self.doubt(f"a shell running a script file ({shown}), which it does not read")
        if how == "stdin":
            if stdin is None:
                self.doubt("a shell reading commands from standard input")
            else:
                self.nested(stdin)

    def eval(self, args: tuple[Word, ...]) -> None:
        self.joined(args, "eval of text built at run time")

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
            self.wrapped(program, args, None, level, RUNUSER)
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
        options: list[Option] = []
        i = 0
        while i < len(args):
            word = args[i]
            if not word.literal or not word.value.startswith("-") or word.value == "-":
                # Its options may come after the file it writes to; a hole is not read as one.
                i += 1
                continue
            if word.value == "--":
                break
            read = read_option("script", args, i, SCRIPT, options)
            if isinstance(read, Unwrapped):
                if read.doubt is not None:
                    self.doubt(read.doubt)
                    self.any_later_word(args)
                return
            i = read
        commands = [value for name, value in options if name in ("c", "command")]
        if not commands:
            self.doubt("script without -c starts a shell that reads commands from standard input")
        for command in commands:
            self.command_string(command, "script")


def _command(words: Sequence[Word]) -> SimpleCommand:
    """A wrapped command; leading `NAME=value` words count as assignments (sudo and env take them)."""
    split = 0
    while split < len(words) - 1 and words[split].literal and ASSIGNMENT.fullmatch(words[split].value):
        split += 1
    source = " ".join(word.render() for word in words)
    return SimpleCommand(tuple(words[split:]), tuple(w.render() for w in words[:split]), source)
