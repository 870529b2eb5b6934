"""What a bash command line runs, read the way bash reads it, for the permission rules.

The bash tool runs `bash -c COMMAND`. Rules are written against commands (`bash(rm -rf*)`), so
the policy needs every simple command the line can run: those in pipelines, lists, subshells,
braces and substitutions, those behind wrappers (`sudo`, `nice -n 5`, `timeout 5`, `xargs`,
`env`, `command`, ...), and those inside command strings (`bash -c '...'`, `eval ...`).

The line is parsed with tree-sitter's bash grammar. Words are read after quote removal
(`"rm"`, `\\rm` and `r'm'` are all `rm`); a word whose value only bash can know at run time
(`$X`, `$(...)`, `{a,b}`) is a hole. Whatever the reader cannot follow with confidence is
recorded as a doubt: the policy then never lets a rule allow the line, and never lets a deny
rule pass it silently.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import tree_sitter_bash
from tree_sitter import Language, Node, Parser

__all__ = ["CommandAnalysis", "SimpleCommand", "Word", "analyse"]

# Deeper than this (bash -c inside eval inside sudo ...) is not worth following.
_MAX_DEPTH = 8
# Anything run through these reads the next argument (after -c) as a script.
_SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh", "mksh", "ash", "yash"})
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
    return CommandAnalysis(tuple(reader.commands), tuple(reader.doubts), reader.writes_files, tuple(reader.embedded))


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
    # `NAME=value` words may come before the command.
    assignments: bool = False
    # `-5` as an option (nice).
    numeric: bool = False
    # A lone `-` is an option (env).
    dash: bool = False
    # The option whose value is itself a command line (env -S).
    split: str = ""
    long_split: str = ""


def _opts(*names: str) -> frozenset[str]:
    return frozenset(names)


_WRAPPERS: dict[str, _Wrapper] = {
    "sudo": _Wrapper(
        flags="AbEeHhiKklnPSsVv", values="CDgpRrTtUu", assignments=True,
        long_flags=_opts("askpass", "background", "bell", "edit", "help", "set-home", "login", "remove-timestamp",
                         "reset-timestamp", "list", "non-interactive", "preserve-groups", "stdin", "shell",
                         "version", "validate", "preserve-env"),
        long_values=_opts("close-from", "chdir", "group", "host", "prompt", "chroot", "role", "type",
                          "command-timeout", "other-user", "user"),
    ),
    "doas": _Wrapper(flags="nsL", values="Cu"),
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
    "chroot": _Wrapper(operands=1, long_flags=_opts("skip-chdir"), long_values=_opts("userspec", "groups")),
}  # fmt: skip


@dataclass(frozen=True)
class _Unwrapped:
    # Index of the wrapped command's first word; None when the wrapper runs nothing.
    start: int | None
    doubt: str | None = None
    # env -S: a command line to read, and where the words after it start.
    split: Word | None = None


def _unwrap(program: str, words: Sequence[Word], spec: _Wrapper) -> _Unwrapped:
    """Where the command run by `program WORDS...` begins, following its option syntax."""
    i = 0
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
                return _Unwrapped(None)
            if name in spec.long_values:
                i += 1 if eq else 2
                continue
            if name in spec.long_flags:
                i += 1
                continue
            return _Unwrapped(None, f"an option of {program} it does not know ({text})")
        taken = 1
        for j, char in enumerate(text[1:], start=1):
            rest = text[j + 1 :]
            if char in spec.stops:
                return _Unwrapped(None)
            if char == spec.split and char:
                split = Word(rest) if rest else (words[i + 1] if i + 1 < len(words) else Word(""))
                return _Unwrapped(i + (1 if rest else 2), split=split)
            if char in spec.values:
                taken = 1 if rest else 2
                break
            if char in spec.optional:
                break
            if char not in spec.flags:
                return _Unwrapped(None, f"an option of {program} it does not know ({text})")
        i += taken
    i += spec.operands
    return _Unwrapped(i if i < len(words) else None)


def _shell_script(words: Sequence[Word]) -> tuple[str, Word | None]:
    """For `bash [options] ...`: ("c", script), ("file", None), ("stdin", None) or ("doubt", word)."""
    i = 0
    command_string = False
    reads_stdin = False
    while i < len(words):
        word = words[i]
        if not word.literal:
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
        return ("c", words[i]) if i < len(words) else ("file", None)
    if i < len(words) and not reads_stdin:
        return ("file", None)
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

    def doubt(self, why: str) -> None:
        if why not in self.doubts:
            self.doubts.append(why)

    # -- scripts

    def script(self, text: str) -> None:
        if self.depth > _MAX_DEPTH:
            self.doubt(f"command strings nested more than {_MAX_DEPTH} deep")
            return
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
        elif program == "eval":
            self.eval(args)
        elif program == "trap":
            self.trap(args)
        elif program == "su":
            self.su(args)
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

    def wrapped(self, program: str, args: tuple[Word, ...], stdin: str | None, level: int) -> None:
        found = _unwrap(program, args, _WRAPPERS[program])
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
            # The command could start at any later word; deny rules get to see each of them. They are
            # not followed further: that could branch at every word, and allow rules are off anyway.
            for index in range(1, len(args)):
                if args[index].literal and not args[index].value.startswith("-"):
                    self.commands.append(_command(args[index:]))
            return
        if found.start is not None:
            self.run(_command(args[found.start :]), stdin, level + 1)

    def shell(self, args: tuple[Word, ...], stdin: str | None) -> None:
        how, script = _shell_script(args)
        if how == "c" and script is not None:
            if script.literal:
                self.nested(script.value)
            else:
                self.doubt(f"a command string built at run time ({_short(script.value)})")
        elif how == "doubt" and script is not None:
            self.doubt(f"a shell option built at run time ({_short(script.value)})")
        elif how == "stdin":
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

    def su(self, args: tuple[Word, ...]) -> None:
        for index, word in enumerate(args):
            value = word.value if word.literal else ""
            script: Word | None = None
            if value in ("-c", "--command") and index + 1 < len(args):
                script = args[index + 1]
            elif value.startswith("--command="):
                script = Word(value.partition("=")[2])
            elif value.startswith("-c") and len(value) > 2:
                script = Word(value[2:])
            if script is not None:
                if script.literal:
                    self.nested(script.value)
                else:
                    self.doubt(f"a command string built at run time ({_short(script.value)})")


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
