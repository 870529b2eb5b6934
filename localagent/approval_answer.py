"""The person's answer to an approval question: --yes, --deny, or asked at the terminal."""

from __future__ import annotations

import argparse
import sys

from localagent.errors import UsageError


def add_answer_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--yes", "-y", action="store_true", help="approve without asking")
    parser.add_argument("--deny", action="store_true", help="remember a no instead")


def approval_answer(args: argparse.Namespace, question: str) -> bool:
    if args.deny:
        return False
    if args.yes:
        return True
    if not sys.stdin.isatty():
        raise UsageError("standard input is not a terminal; pass --yes to approve or --deny to refuse")
    return input(f"{question} [y/N] ").strip().lower() in ("y", "yes")
