"""``localagent bench --interleave SESSION SESSION ...``: recorded sessions replayed turn by turn
against one server (a profile started here, or ``--base-url``), and what each request read again
because another session's turn came between (server/bench/interleave.py)."""

from __future__ import annotations

import argparse
import asyncio
import json
from dataclasses import asdict

from rich.table import Table

from localagent.bench.replay_command import load_session
from localagent.bench.url_targets import url_targets
from localagent.console import out
from localagent.context import AppContext
from localagent.errors import UsageError
from server.bench.interleave import InterleavedRequest, interleave
from server.bench.replay_plan import ReplaySession

# A turn after a session's first may read its own new tokens and this much more.
ALLOWED_EXTRA = 0.10


def add_arguments(bench: argparse.ArgumentParser) -> None:
    bench.add_argument(
        "--interleave",
        nargs="+",
        metavar="SESSION",
        help="replay these sessions (files or ids) turn by turn against one server: --profiles P or --base-url URL",
    )


def cmd_interleave(args: argparse.Namespace) -> int:
    from localagent.run_command import session_store

    ctx = AppContext.load()
    profiles, urls = args.profiles or [], args.base_url or []
    if len(profiles) + len(urls) != 1:
        raise UsageError("--interleave measures one server: give one --profiles PROFILE or one --base-url URL")
    if len(args.interleave) < 2:
        raise UsageError("--interleave needs two sessions or more (the same one twice is allowed)")
    sessions = _distinct([load_session(given, session_store(ctx)) for given in args.interleave])
    rows = asyncio.run(_measure(ctx, sessions, profiles[0] if profiles else None, urls[0] if urls else None, args))
    print_report(rows)
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        path = args.out / "interleave.json"
        path.write_text(json.dumps([asdict(row) for row in rows], indent=1) + "\n", encoding="utf-8")
        out.print(f"wrote {path}", markup=False, highlight=False)
    return 0


def _distinct(sessions: list[ReplaySession]) -> list[ReplaySession]:
    """The same session given twice is two sessions, named apart."""
    seen: dict[str, int] = {}
    named = []
    for session in sessions:
        seen[session.name] = seen.get(session.name, 0) + 1
        name = session.name if seen[session.name] == 1 else f"{session.name}#{seen[session.name]}"
        named.append(
            ReplaySession(name, session.source, session.session_id, session.model, session.requests, session.turns)
        )
    return named


async def _measure(
    ctx: AppContext, sessions: list[ReplaySession], profile: str | None, url: str | None, args: argparse.Namespace
) -> list[InterleavedRequest]:
    max_tokens = args.max_tokens or 16
    key = ctx.settings.server.api_key
    if url is not None:
        endpoint = url_targets([url], key)[0].endpoint
        assert endpoint is not None
        return await interleave(endpoint.base_url, sessions, api_key=key, max_tokens=max_tokens)
    assert profile is not None
    handle = await ctx.server_manager().start_in_process(profile, port="auto")
    try:
        return await interleave(handle.base_url, sessions, api_key=key, max_tokens=max_tokens)
    finally:
        await handle.close()


def print_report(rows: list[InterleavedRequest]) -> None:
    table = Table("session", "request", "prompt", "read", "reused", "own new", "read again", "lost s")
    for row in rows:
        table.add_row(
            row.session, str(row.index), str(row.prompt_tokens), str(row.read), str(row.reused),
            str(row.own_new), str(row.extra), f"{row.lost_s:.2f}",
        )  # fmt: skip
    out.print(table)
    for line in summary_lines(rows):
        out.print(line, markup=False, highlight=False)


def summary_lines(rows: list[InterleavedRequest]) -> list[str]:
    """Per session: the turns after its first that read more than their own new tokens + 10%."""
    lines = []
    for name in dict.fromkeys(row.session for row in rows):
        mine = [row for row in rows if row.session == name][1:]
        over = [row for row in mine if row.read > row.own_new * (1 + ALLOWED_EXTRA) + 1]
        lost = sum(row.lost_s for row in mine)
        extra = sum(row.extra for row in mine)
        lines.append(
            f"{name}: {len(over)} of {len(mine)} later requests read more than their own new tokens + 10%; "
            f"{extra} tokens read again, {lost:.1f} s of prefill lost"
        )
    return lines


__all__ = ["add_arguments", "cmd_interleave", "print_report", "summary_lines"]
