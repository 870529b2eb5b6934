"""Where the command that a wrapper runs begins, read by the wrapper's own option syntax.

`sudo -u root rm x` runs `rm x`; `nice -n 5 rm x` too; `timeout 5 rm x` after an operand; and
`command -v rm` runs nothing. Also: which replace string xargs fills in, what a shell runs
(`-c` string, script file or standard input), and the commands `find -exec` runs.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from agent.permissions.shell.words import ASSIGNMENT, Word
from agent.permissions.shell.wrappers import Wrapper

__all__ = ["Option", "Unwrapped", "find_exec", "read_option", "shell_script", "unwrap", "xargs_replace"]

# An option given, as (name, value): a letter or a long name, and the value's word if it took one.
Option = tuple[str, Word | None]


@dataclass(frozen=True)
class Unwrapped:
    # Index of the wrapped command's first word; None when the wrapper runs nothing.
    start: int | None
    doubt: str | None = None
    # env -S: a command line to read, and where the words after it start.
    split: Word | None = None
    # An option said that nothing is run (`command -v`), as opposed to no command being there.
    stopped: bool = False
    # The options given, in order.
    options: tuple[Option, ...] = ()


def unwrap(program: str, words: Sequence[Word], spec: Wrapper) -> Unwrapped:
    """Where the command run by `program WORDS...` begins, following its option syntax."""
    options: list[Option] = []
    i = 0
    if spec.leading_operands and words and not (words[0].literal and words[0].value.startswith("-")):
        i = spec.leading_operands
    while i < len(words):
        word = words[i]
        if not word.literal:
            # `nice $N rm`: an option or the command; bash decides at run time.
            return Unwrapped(None, f"an option to {program} built at run time ({word.value})")
        text = word.value
        if text == "--":
            i += 1
            break
        skipped = (
            (spec.assignments and ASSIGNMENT.fullmatch(text))
            or (spec.dash and text == "-")
            or (spec.numeric and re.fullmatch(r"--?[0-9]+", text))
        )
        if skipped:
            i += 1
            continue
        if not text.startswith("-") or text == "-":
            break
        read = read_option(program, words, i, spec, options)
        if isinstance(read, Unwrapped):
            return read
        i = read
    i += spec.operands
    return Unwrapped(i if i < len(words) else None, options=tuple(options))


def read_option(program: str, words: Sequence[Word], i: int, spec: Wrapper, options: list[Option]) -> int | Unwrapped:
    """Read the option word `words[i]` (literal, `-x...` or `--name`) into `options`.

    The index of the word after it and its value, or, where reading stops at it, how: an
    option that runs nothing, env's -S command line, or an option the spec does not know.
    """
    text = words[i].value
    if text.startswith("--"):
        name, eq, value = text[2:].partition("=")
        if name == spec.long_split and name:
            split = Word(value) if eq else _next_word(words, i)
            return Unwrapped(i + (1 if eq else 2), split=split or Word(""))
        if name in spec.long_stops:
            return Unwrapped(None, stopped=True)
        if name in spec.long_values:
            options.append((name, Word(value) if eq else _next_word(words, i)))
            return i + (1 if eq else 2)
        if name in spec.long_flags or spec.long_single:
            options.append((name, Word(value) if eq else None))
            return i + 1
        return Unwrapped(None, f"an option of {program} it does not know ({text})")
    for j, char in enumerate(text[1:], start=1):
        rest = text[j + 1 :]
        if char in spec.stops:
            return Unwrapped(None, stopped=True)
        if char == spec.split and char:
            split = Word(rest) if rest else (_next_word(words, i) or Word(""))
            return Unwrapped(i + (1 if rest else 2), split=split)
        if char in spec.values:
            options.append((char, Word(rest) if rest else _next_word(words, i)))
            return i + (1 if rest else 2)
        if char in spec.optional:
            options.append((char, Word(rest) if rest else None))
            return i + 1
        if char not in spec.flags:
            return Unwrapped(None, f"an option of {program} it does not know ({text})")
        options.append((char, None))
    return i + 1


def _next_word(words: Sequence[Word], i: int) -> Word | None:
    return words[i + 1] if i + 1 < len(words) else None


def xargs_replace(options: Sequence[Option]) -> str | None:
    """The replace string of `xargs -I R` / `-i` / `--replace`; "" when only known at run time."""
    replace: str | None = None
    for name, value in options:
        if name == "I":
            replace = value.value if value is not None and value.literal else ""
        elif name in ("i", "replace"):
            replace = "{}" if value is None else (value.value if value.literal else "")
    return replace


def shell_script(words: Sequence[Word]) -> tuple[str, Word | None]:
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


def find_exec(args: Sequence[Word]) -> Iterator[tuple[Word, ...]]:
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
