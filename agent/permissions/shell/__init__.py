"""What a shell command line does, read with tree-sitter: the commands it runs, the programs they
wrap, the paths and options they name. The permission engine asks ``analyse`` and reads the
``CommandAnalysis`` it returns; nothing outside the permissions room reads a shell line."""

from agent.permissions.shell.commands import analyse
from agent.permissions.shell.words import CommandAnalysis

__all__ = ["CommandAnalysis", "analyse"]
