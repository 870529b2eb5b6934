"""The syntax of a bash command line, read from tree-sitter's tree the way bash reads it.

Pipelines, lists, subshells, braces, conditionals and loops are walked for the simple commands
they hold; words are read after quote removal, a value only bash can know being a hole; output
redirected into a file is noted. Whatever the reader cannot follow with confidence (syntax it
does not know, arithmetic on variables, substitutions the parser left inside plain text) is a
doubt. What a simple command then runs is for agent.permissions.shell.programs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from tree_sitter import Node

from agent.permissions.shell.continuations import join_continuations
from agent.permissions.shell.tree import heredoc_quoted, named_descendants, node_text, parse_tree
from agent.permissions.shell.words import (
    SimpleCommand,
    Word,
    ansi_c,
    hides_substitution,
    short,
    squash,
    unescape,
    unescape_double,
)

__all__ = ["MAX_DEPTH", "SyntaxReader"]

# Deeper than this (bash -c inside eval inside sudo ...) is not worth following.
MAX_DEPTH = 8
_ARITHMETIC_TESTS = frozenset({"-eq", "-ne", "-lt", "-le", "-gt", "-ge"})
_WRITE_REDIRECTS = frozenset({">", ">>", ">|", "&>", "&>>", "<>"})
# Parameter expansions that only substitute a value. Others can hide code: `${x@P}` expands
# `$(...)` in the value, and subscripts and offsets are arithmetic, which runs `a[$(...)]`.
_PLAIN_EXPANSION = re.compile(
    r"\$\{(?:#?(?:[A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*#?$!-])\}"
    r"|[A-Za-z_][A-Za-z0-9_]*(?::?[-=+?]|##?|%%?|//?|/[#%]|\^\^?|,,?|@[QEUuLaAKk]\}))",
    re.DOTALL,
)
_BRACE_EXPANSION = re.compile(r"\{[^{}\x00]*(?:,|\.\.)[^{}\x00]*\}")
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
class SyntaxReader:
    """Reads a command line's syntax tree: its statements, redirections, words and doubts.

    Every simple command found goes to `run`, which only records it here; CommandReader also
    follows what the command runs (wrappers, shells, eval).
    """

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
        if self.depth > MAX_DEPTH:
            self.doubt(f"command strings nested more than {MAX_DEPTH} deep")
            return
        text, problem = join_continuations(text)
        if problem is not None:
            self.doubt(problem)
        if self.depth == 0:
            self.text = text
        root = parse_tree(text)
        if root is None:
            self.doubt("text that is not valid Unicode")
            return
        if root.has_error:
            self.doubt("shell syntax the parser cannot read")
        self.node(root)

    def nested(self, text: str) -> None:
        """A command string that is run (bash -c, eval): what it runs, this line runs."""
        inner = self.read_inner(text)
        self.commands += inner.commands
        self.embedded += inner.embedded
        self.writes_files = self.writes_files or inner.writes_files
        for why in inner.doubts:
            self.doubt(why)

    def maybe_code(self, text: str, *, always: bool = False) -> None:
        """Quoted text holding `$(` or a backtick may still be run (PS4, trap, arithmetic on it)."""
        if not (always or "$(" in text or "`" in text) or self.depth > MAX_DEPTH:
            return
        inner = self.read_inner(text)
        self.embedded += inner.commands + inner.embedded

    def read_inner(self, text: str) -> SyntaxReader:
        """Text inside this line that bash reads as a script of its own, read one level deeper."""
        inner = type(self)(self.depth + 1)
        inner.script(text)
        return inner

    def run(self, command: SimpleCommand, stdin: str | None = None, level: int = 0) -> None:
        """A simple command the line runs, fed `stdin` when that is known text; `level`: wrappers around it."""
        self.commands.append(command)

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
                assignments.append(squash(node_text(child)))
            elif child.type in _REDIRECTS:
                stdin = self.redirect(child) or stdin
            elif child.type == "command_name":
                words += [self.word(part) for part in child.named_children]
            elif child.type not in _QUIET:
                words.append(self.word(child))
        self.run(SimpleCommand(tuple(words), tuple(assignments), squash(node_text(node))), stdin)

    def declaration(self, node: Node) -> None:
        # `export A=1 B`, `local -r x`, `unset f`: a command named by its keyword.
        words = [Word(node.children[0].type)] if node.child_count else []
        for child in node.named_children:
            if child.type == "variable_assignment":
                self.assignment_value(child)
                words.append(Word(squash(node_text(child))))
            else:
                words.append(self.word(child))
        if (
            words
            and words[0].value in ("declare", "typeset", "local")
            and any(w.literal and w.value.startswith("-") and "i" in w.value for w in words[1:])
        ):
            self.doubt("an integer variable (its values are evaluated as arithmetic)")
        self.commands.append(SimpleCommand(tuple(words), (), squash(node_text(node))))

    def assignments_alone(self, node: Node) -> None:
        parts = [node] if node.type == "variable_assignment" else list(node.named_children)
        for part in parts:
            self.assignment_value(part)
        # A bare `PATH=...` changes what later commands run, so it is a command of its own for allow rules.
        self.commands.append(SimpleCommand((), tuple(squash(node_text(p)) for p in parts), squash(node_text(node))))

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
        quoted = start is not None and heredoc_quoted(start)
        body: str | None = ""
        for child in node.named_children:
            if child.type == "heredoc_body":
                body = node_text(child) if quoted else self.heredoc_body(child)
            elif child.type not in _QUIET:
                # `cat <<EOF | grep x`: the rest of the line hangs off the redirection.
                self.node(child)
        return body

    def heredoc_body(self, node: Node) -> str | None:
        literal = True
        for child in node.named_children:
            if child.type == "heredoc_content":
                if hides_substitution(node_text(child)):
                    self.doubt("a here-document with command substitution")
                    self.maybe_code(node_text(child), always=True)
                    literal = False
                continue
            literal = False
            if child.type in ("command_substitution", "arithmetic_expansion", "process_substitution"):
                self.doubt("a here-document with command substitution")
            self.word(child)
        return node_text(node) if literal else None

    def arithmetic(self, node: Node) -> None:
        if any(_names_variable(d) for d in named_descendants(node)):
            self.doubt("arithmetic on variables (their values can hide commands)")

    def test(self, node: Node) -> None:
        # Only `[[ ]]` evaluates the operands of -eq and friends as arithmetic; `[` compares numbers.
        if not node.child_count or node.children[0].type != "[[":
            return
        descendants = list(named_descendants(node))
        arithmetic = any(d.type == "test_operator" and node_text(d) in _ARITHMETIC_TESTS for d in descendants)
        if arithmetic and any(_names_variable(d) for d in descendants):
            self.doubt("arithmetic on variables (their values can hide commands)")

    def subscript(self, node: Node) -> None:
        index = node.child_by_field_name("index")
        if index is not None and not (index.type == "number" or node_text(index) in ("@", "*")):
            self.doubt("an array subscript (evaluated as arithmetic)")
        self.children(node)

    # -- words

    def word(self, node: Node) -> Word:
        kind = node.type
        text = node_text(node)
        if kind in ("word", "regex", "extglob_pattern") and hides_substitution(text):
            # tree-sitter leaves some substitutions as plain text (`${x:-`cmd`}`); bash would run them.
            self.doubt(f"a substitution the parser did not separate ({short(text)})")
            self.maybe_code(text, always=True)
            return Word(text, literal=False, plain=False)
        if kind == "word":
            if "\n" in text:
                # bash ends an unquoted word at a newline; tree-sitter can glue the next line on
                # (after a comment that ends in a backslash), hiding the command that line runs.
                self.doubt(f"a word the parser read across a line break ({short(text)})")
                self.maybe_code(text, always=True)
                return Word(text, literal=False, plain=False)
            value, unquoted = unescape(text)
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
            decoded = ansi_c(text[2:-1])
            if decoded is None:
                return Word(text, literal=False, plain=False)
            self.maybe_code(decoded)
            return Word(decoded, plain=False)
        if kind == "concatenation":
            return self.concatenation(node)
        if kind == "expansion":
            if not _PLAIN_EXPANSION.match(text):
                self.doubt(f"a parameter expansion it cannot follow ({short(text)})")
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
                if hides_substitution(node_text(child)):
                    self.doubt(f"a substitution the parser did not separate ({short(node_text(child))})")
                    self.maybe_code(node_text(child), always=True)
                    literal = False
                parts.append(unescape_double(node_text(child)))
            elif child.type == "string":
                inner = self.double_quoted(child)
                literal = literal and inner.literal
                parts.append(inner.value)
            else:
                literal = False
                self.word(child)
        if not literal:
            return Word(node_text(node), literal=False, plain=False)
        value = "".join(parts)
        self.maybe_code(value)
        return Word(value, plain=False)

    def concatenation(self, node: Node) -> Word:
        parts = [(child, self.word(child)) for child in node.named_children]
        literal = all(word.literal for _, word in parts)
        # Brace expansion can span parts (`{a,b}` parses as three words); check the unquoted text.
        unquoted = "".join(unescape(node_text(c))[1] if c.type == "word" else "\x00" for c, _ in parts)
        if _BRACE_EXPANSION.search(unquoted) or not literal:
            return Word(node_text(node), literal=False, plain=False)
        value = "".join(word.value for _, word in parts)
        return Word(value, plain=all(word.plain for _, word in parts), globbing=any(word.globbing for _, word in parts))


def _names_variable(node: Node) -> bool:
    """A named variable (`x`, `$x`, `${x}`); `$?`, `$#` and friends only ever hold plain values here."""
    if node.type == "variable_name":
        return True
    if node.type in ("simple_expansion", "expansion"):
        return not any(child.type == "special_variable_name" for child in node.named_children)
    return False
