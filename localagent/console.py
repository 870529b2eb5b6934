"""The two consoles every command prints to: answers and tables on stdout, progress, warnings and
errors on stderr. A module of its own so command modules never import the CLI entry point."""

from __future__ import annotations

from rich.console import Console

err = Console(stderr=True, highlight=False, soft_wrap=True)
out = Console(highlight=False, soft_wrap=True)
