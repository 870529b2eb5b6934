"""tree-sitter's bash grammar: one parser for every read, and the text of what it finds."""

from __future__ import annotations

from collections.abc import Iterator
from functools import lru_cache

import tree_sitter_bash
from tree_sitter import Language, Node, Parser

__all__ = ["named_descendants", "node_text", "parse_tree"]


@lru_cache(maxsize=1)
def _bash_parser() -> Parser:
    return Parser(Language(tree_sitter_bash.language()))


def parse_tree(text: str) -> Node | None:
    """The syntax tree of a command line; None for text that is not valid Unicode."""
    try:
        source = text.encode("utf-8", "surrogatepass")
    except UnicodeEncodeError:
        return None
    return _bash_parser().parse(source).root_node


def node_text(node: Node) -> str:
    return (node.text or b"").decode("utf-8", "surrogatepass")


def named_descendants(node: Node) -> Iterator[Node]:
    for child in node.named_children:
        yield child
        yield from named_descendants(child)


def heredoc_quoted(start: Node) -> bool:
    """Whether a here-document's delimiter (its `heredoc_start`) is quoted: the body is then literal."""
    return any(q in node_text(start) for q in "'\"\\")
