"""Command lines with their API key hidden, for showing: kept apart from ``server.argv`` so that
`server status` reads records without loading profiles."""

from __future__ import annotations


def redact_argv(argv: list[str], placeholder: str = "***") -> list[str]:
    """``argv`` with the value of every ``--api-key`` (``--api-key K`` or ``--api-key=K``) replaced:
    an engine that takes its key only on the command line (SGLang) must not show it in commands,
    reports or ``server status``."""
    shown = []
    for i, arg in enumerate(argv):
        if i > 0 and argv[i - 1] == "--api-key":
            shown.append(placeholder)
        elif arg.startswith("--api-key="):
            shown.append(f"--api-key={placeholder}")
        else:
            shown.append(arg)
    return shown
