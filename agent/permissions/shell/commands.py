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

The pieces: agent.permissions.shell.words (words and commands), agent.permissions.shell.continuations, agent.permissions.shell.syntax
(the tree, read), agent.permissions.shell.programs (what commands run), agent.permissions.shell.wrappers and
agent.permissions.shell.options (wrappers and their options).
"""

from __future__ import annotations

from functools import lru_cache

from agent.permissions.shell.continuations import join_continuations
from agent.permissions.shell.programs import CommandReader
from agent.permissions.shell.words import CommandAnalysis, SimpleCommand, Word

__all__ = ["CommandAnalysis", "SimpleCommand", "Word", "analyse", "join_continuations"]


@lru_cache(maxsize=512)
def analyse(command: str) -> CommandAnalysis:
    try:
        command.encode("utf-8")
    except UnicodeEncodeError:
        # A lone surrogate (JSON from the model can carry one) has no bytes bash could be given,
        # and tree-sitter would read half a character: nothing here can be read with confidence.
        return CommandAnalysis((), ("the command holds text that is not valid Unicode",), True)
    reader = CommandReader()
    try:
        reader.script(command)
    except RecursionError:
        # Thousands of nested parentheses: nothing that deep is read with confidence.
        return CommandAnalysis((), ("nesting too deep to follow",), False)
    return CommandAnalysis(
        tuple(reader.commands), tuple(reader.doubts), reader.writes_files, tuple(reader.embedded), reader.text
    )
