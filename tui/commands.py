"""Slash commands typed at the prompt: parsing and help text (the chat screen runs them).

Besides slash commands, a prompt may start with ``!`` (run the rest as a shell command) and hold
``@path`` mentions (attach that file); ``//`` and ``!!`` send a leading ``/`` or ``!`` as text.
"""

from __future__ import annotations

from dataclasses import dataclass

from agent.permissions import MODE_NAMES

# name -> (usage, what it does); the order is the order /help lists them in.
COMMANDS: dict[str, tuple[str, str]] = {
    "undo": ("/undo", "restore the files to how they were before the last turn"),
    "diff": ("/diff [last]", "show what the agent changed this session (or in the last turn)"),
    "clear": ("/clear", "forget the conversation and start afresh (files are kept)"),
    "compact": ("/compact", "summarise earlier turns to free context"),
    "init": ("/init", "have the agent survey the repository and write (or improve) AGENTS.md"),
    "mode": (f"/mode [{'|'.join(MODE_NAMES)}]", "show or change the permission mode"),
    "mcp": ("/mcp", "list MCP servers and their state"),
    "server": ("/server [status|restart|logs]", "the model server: state, restart, last log lines"),
    "help": ("/help", "this list"),
    "quit": ("/quit", "stop the server this session started and leave"),
}
# Commands that make sense while a turn runs; the others would race with the agent.
WHILE_RUNNING = frozenset({"help", "server", "mcp", "quit", "mode"})


@dataclass(frozen=True)
class SlashCommand:
    name: str
    args: tuple[str, ...] = ()

    @property
    def known(self) -> bool:
        return self.name in COMMANDS


def parse(text: str) -> SlashCommand | None:
    """A slash command, or None for a prompt. "//x" sends "/x" to the model as text."""
    stripped = text.strip()
    if not stripped.startswith("/") or stripped.startswith("//"):
        return None
    words = stripped[1:].split()
    if not words:
        return SlashCommand("help")
    return SlashCommand(words[0].lower(), tuple(words[1:]))


def mode_hint(mode: str) -> str:
    """How a person in the TUI picks a permission mode (for the policy's remedies)."""
    return f"/mode {mode}"


def shell_command(text: str) -> str | None:
    """The command of a ``!command`` prompt ("" for a bare ``!``); None for anything else."""
    stripped = text.strip()
    if not stripped.startswith("!") or stripped.startswith("!!"):
        return None
    return stripped[1:].strip()


def unescape(text: str) -> str:
    stripped = text.lstrip()
    return stripped[1:] if stripped.startswith(("//", "!!")) else text


def help_text() -> str:
    width = max(len(usage) for usage, _ in COMMANDS.values())
    lines = [f"{usage.ljust(width)}  {what}" for usage, what in COMMANDS.values()]
    lines += [
        "",
        "@path attaches a file (typing @ opens a picker). !command runs a shell command as the agent's",
        "bash does (same sandbox, no approval: you typed it); your next message shows the model its",
        "output. // or !! at the start sends a leading / or ! as text.",
        "Enter sends, Shift+Enter or Ctrl+J starts a new line, Up/Down recall earlier prompts",
        "(kept per repository).",
        "Esc or Ctrl+C cancels the running turn; Ctrl+C twice on an idle prompt quits.",
    ]
    return "\n".join(lines)
