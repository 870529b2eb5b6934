"""``localagent config approve``: let this repository's `.localagent.toml` apply whole.

Until approved, a workspace file only narrows (see ``workspace_trust``). Approval is for the
exact content: a changed file is shown as a diff against what was approved, and asked again.
"""

from __future__ import annotations

import argparse
import difflib
import tomllib

from localagent.approval_answer import add_answer_arguments, approval_answer
from localagent.config import project_file
from localagent.console import out
from localagent.context import AppContext, approval_store
from localagent.errors import UsageError
from localagent.workspace_trust import content_digest, narrow_workspace_layer
from tools.terminal_text import one_line_safe


def register(commands: argparse._SubParsersAction) -> None:
    config = commands.add_parser("config", help="workspace configuration trust")
    sub = config.add_subparsers(dest="config_command", metavar="ACTION", required=True)
    approve = sub.add_parser("approve", help="approve this repository's .localagent.toml as it is now")
    add_answer_arguments(approve)
    approve.set_defaults(handler=cmd_approve)


def cmd_approve(args: argparse.Namespace) -> int:
    ctx = AppContext.load()
    path = project_file(ctx.workspace)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        out.print(f"nothing to approve: {path} does not exist", soft_wrap=True, markup=False)
        return 0
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read {path}: {exc}") from None
    store = approval_store(ctx.paths)
    before = store.approved_content(ctx.workspace, "config")
    if before is None:
        out.print(f"{path} says:", soft_wrap=True, markup=False)
        for line in text.splitlines():
            out.print(f"  {one_line_safe(line)}", soft_wrap=True, markup=False)
    else:
        out.print(f"{path} changed since you approved it:", soft_wrap=True, markup=False)
        diff = difflib.unified_diff(before.splitlines(), text.splitlines(), "approved", "now", lineterm="", n=2)
        for line in diff:
            out.print(f"  {one_line_safe(line)}", soft_wrap=True, markup=False)
    try:
        widening = narrow_workspace_layer({}, tomllib.loads(text)).ignored
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{path}: not valid TOML: {exc}; fix the file") from None
    if widening:
        out.print("settings that widen what you allow: " + ", ".join(widening), soft_wrap=True, markup=False)
    approved = approval_answer(args, "Apply this file whole whenever localagent runs here?")
    store.remember(ctx.workspace, content_digest(text), approved, "config", content=text if approved else None)
    out.print("approved" if approved else "not approved; its widening settings stay ignored")
    return 0
