"""Rule patterns run as automata, so that matching takes time linear in the text.

Three pattern languages share one automaton: star patterns for commands and call summaries
(`*` matches anything; a trailing `:*` means "this command, any arguments"), gitignore-style
path patterns for file rules, and the globs the glob and grep tools take. No pattern, even one
from a workspace's own config, can make a decision slow. Star patterns can also be compared with
a command that has holes (values known only at run time): could some value make it match?
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache

from tools.glob_patterns import _class_end, _translate_class

__all__ = ["Wildcard", "could_match", "escape_star", "glob_pattern", "has_wildcard", "path_pattern", "star_pattern"]

# A test on one character: that character, any character (None), or a predicate.
_Test = str | Callable[[str], bool] | None
# Lazily built automaton steps kept per pattern; past this the cache starts over.
_STEP_CACHE_LIMIT = 4096
# A wildcard position when star patterns are compared with one another.
_ANY = None


def has_wildcard(pattern: str) -> bool:
    return re.search(r"(?<!\\)\*", pattern) is not None


def escape_star(text: str) -> str:
    return text.replace("\\", "\\\\").replace("*", "\\*")


def _not_slash(char: str) -> bool:
    return char != "/"


class Wildcard:
    """A rule pattern run as an automaton over the text, one character at a time.

    Matching takes time linear in the text (times the pattern's size), whatever the pattern:
    `*a*a*a*a*b` cannot backtrack as a regular expression would. The sets of positions reached
    are cached as they are met, so repeated matching costs a dictionary look-up per character.
    """

    def __init__(self) -> None:
        self.edges: list[list[tuple[_Test, int]]] = [[]]
        self.skips: list[list[int]] = [[]]
        self.end = 0
        self.accepting: frozenset[int] = frozenset()
        self.start: frozenset[int] = frozenset()
        self.cache: dict[tuple[frozenset[int], str], frozenset[int]] = {}

    # -- building

    def _state(self) -> int:
        self.edges.append([])
        self.skips.append([])
        return len(self.edges) - 1

    def one(self, test: _Test) -> None:
        """Exactly one character that passes `test`."""
        state = self._state()
        self.edges[self.end].append((test, state))
        self.end = state

    def many(self, test: _Test) -> None:
        """Any number of characters that pass `test`."""
        state = self._state()
        self.skips[self.end].append(state)
        self.edges[state].append((test, state))
        self.end = state

    def directories(self) -> None:
        """`(?:[^/]*/)*`: nothing, or whole directories each ending in `/`."""
        boundary, inside = self._state(), self._state()
        self.skips[self.end].append(boundary)
        self.edges[boundary] += [("/", boundary), (_not_slash, inside)]
        self.edges[inside] += [("/", boundary), (_not_slash, inside)]
        self.end = boundary

    def optional_directories(self) -> None:
        """`(?:.*/)?`: nothing, or anything that ends in `/`."""
        after, inside = self._state(), self._state()
        self.skips[self.end] += [after, inside]
        self.edges[inside] += [(None, inside), ("/", after)]
        self.end = after

    def finish(self, tail: str | Callable[[str], bool] | None = None) -> Wildcard:
        """Accept at the end; with a `tail` test, also after one such character and then anything."""
        accepting = {self.end}
        if tail is not None:
            rest = self._state()
            self.edges[self.end].append((tail, rest))
            self.edges[rest].append((None, rest))
            accepting.add(rest)
        self.accepting = frozenset(accepting)
        self.start = self._closure({0})
        return self

    # -- running

    def _closure(self, states: Iterable[int]) -> frozenset[int]:
        seen = set(states)
        stack = list(seen)
        while stack:
            for nxt in self.skips[stack.pop()]:
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append(nxt)
        return frozenset(seen)

    def advance(self, states: frozenset[int], text: str) -> frozenset[int]:
        for char in text:
            if not states:
                break
            key = (states, char)
            found = self.cache.get(key)
            if found is None:
                reached = set()
                for state in states:
                    for test, nxt in self.edges[state]:
                        if test is None or (test == char if isinstance(test, str) else test(char)):
                            reached.add(nxt)
                found = self._closure(reached)
                if len(self.cache) >= _STEP_CACHE_LIMIT:
                    self.cache.clear()
                self.cache[key] = found
            states = found
        return states

    def accepts(self, states: frozenset[int]) -> bool:
        return not self.accepting.isdisjoint(states)

    def fullmatch(self, text: str) -> bool:
        return self.accepts(self.advance(self.start, text))

    def covers_all(self, prefix: str) -> bool:
        """Whether every text that starts with `prefix` matches: an accepting state that takes anything."""
        states = self.advance(self.start, prefix)
        return any(state in self.accepting and (None, state) in self.edges[state] for state in states)


# -- the three pattern languages -------------------------------------------------------------


@lru_cache(maxsize=512)
def _star_tokens(pattern: str) -> tuple[tuple[str | None, ...], bool]:
    """A star pattern as characters and wildcards (None), and whether it ends in the word-prefix `:*`."""
    word_prefix = pattern.endswith(":*") and not pattern.endswith("\\:*")
    body = pattern[:-2] if word_prefix else pattern
    tokens: list[str | None] = []
    i = 0
    while i < len(body):
        if body[i] == "\\" and i + 1 < len(body):
            tokens.append(body[i + 1])
            i += 2
            continue
        tokens.append(_ANY if body[i] == "*" else body[i])
        i += 1
    return tuple(tokens), word_prefix


@lru_cache(maxsize=512)
def star_pattern(pattern: str) -> Wildcard:
    """`*` matches anything (spaces and slashes too); a trailing `:*` means "this command, any arguments"."""
    tokens, word_prefix = _star_tokens(pattern)
    wildcard = Wildcard()
    for token in tokens:
        if token is _ANY:
            wildcard.many(None)
        else:
            wildcard.one(token)
    return wildcard.finish(str.isspace if word_prefix else None)


@lru_cache(maxsize=512)
def path_pattern(pattern: str) -> Wildcard:
    """gitignore-style: `**` crosses directories, `*` does not; a name without `/` matches at any depth."""
    text = pattern.strip()
    anchored = text.startswith(("/", "./"))
    text = text.removeprefix("./").lstrip("/")
    if text.endswith("/"):
        text += "**"
    anchored = anchored or "/" in text.rstrip("/")
    wildcard = Wildcard()
    if not anchored:
        wildcard.optional_directories()
    _glob_steps(wildcard, text)
    # Naming a directory covers what is inside it, as in .gitignore.
    return wildcard.finish("/")


@lru_cache(maxsize=512)
def glob_pattern(pattern: str) -> Wildcard:
    """A glob as the glob tool and grep's `glob` read it (tools.glob_patterns), over a whole path."""
    wildcard = Wildcard()
    _glob_steps(wildcard, pattern)
    return wildcard.finish()


def _glob_steps(wildcard: Wildcard, pattern: str) -> None:
    """The steps of tools.glob_patterns.glob_to_regex_source, as automaton states."""
    i, n = 0, len(pattern)
    while i < n:
        if pattern.startswith("**/", i):
            wildcard.directories()
            i += 3
        elif pattern.startswith("**", i) and i + 2 == n:
            wildcard.many(None)
            i += 2
        elif pattern[i] == "*":
            while i < n and pattern[i] == "*":
                i += 1
            wildcard.many(_not_slash)
        elif pattern[i] == "?":
            wildcard.one(_not_slash)
            i += 1
        elif pattern[i] == "[":
            end = _class_end(pattern, i)
            test = _class_test(pattern[i + 1 : end]) if end >= 0 else None
            if test is None:
                wildcard.one("[")
                i += 1
            else:
                wildcard.one(test)
                i = end + 1
        elif pattern[i] == "\\" and i + 1 < n:
            wildcard.one(pattern[i + 1])
            i += 2
        else:
            wildcard.one(pattern[i])
            i += 1


def _class_test(body: str) -> Callable[[str], bool] | None:
    try:
        # One character class matched against one character: nothing to backtrack over.
        compiled = re.compile(_translate_class(body), re.DOTALL)
    except re.error:
        return None
    return lambda char: compiled.fullmatch(char) is not None


# -- comparing a star pattern with a command that has holes ---------------------------------


def could_match(pattern: str, shape: Sequence[str | None]) -> bool:
    """Whether some value of the holes (None) in `shape` makes the star pattern match it."""
    text: list[str | None] = []
    for piece in shape:
        text.extend([_ANY] if piece is None else list(piece))
    return any(_overlap(alternative, text) for alternative in _alternatives(pattern))


def _alternatives(pattern: str) -> tuple[tuple[str | None, ...], ...]:
    """A rule pattern as characters and wildcards; `x:*` gives two alternatives (`x`, `x *`)."""
    tokens, word_prefix = _star_tokens(pattern)
    if word_prefix:
        return (tokens, (*tokens, " ", _ANY))
    return (tokens,)


def _overlap(a: Sequence[str | None], b: Sequence[str | None]) -> bool:
    """Whether two star patterns share a string: a walk over pairs of positions."""
    seen: set[tuple[int, int]] = set()
    queue = deque([(0, 0)])
    while queue:
        i, j = queue.popleft()
        if (i, j) in seen:
            continue
        seen.add((i, j))
        if i == len(a) and j == len(b):
            return True
        steps: list[tuple[int, int]] = []
        if i < len(a) and a[i] is _ANY:
            steps += [(i + 1, j)] + ([(i, j + 1)] if j < len(b) else [])
        if j < len(b) and b[j] is _ANY:
            steps += [(i, j + 1)] + ([(i + 1, j)] if i < len(a) else [])
        if i < len(a) and j < len(b) and a[i] is not _ANY and a[i] == b[j]:
            steps.append((i + 1, j + 1))
        queue.extend(step for step in steps if step not in seen)
    return False
