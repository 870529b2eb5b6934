"""A synthetic agent and runtime: a canned event stream at a chosen token rate, no server.

A test double: used by the snapshot and app tests, which need the app without a network, and by
the benchmark (scripts/tui_bench.py). It satisfies ``tui.runtime.TuiRuntime`` / ``TuiAgent``, the
surface the TUI uses on the real runtime and ``Agent``, and the optional ``RuleStore``: with
``rule_files`` it saves "allow always" rules to small TOML files (none by default, and then the
approval modal offers no saving).
"""

from __future__ import annotations

import asyncio
import difflib
import json
import time
import tomllib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent.approval import ApprovalRequest, Approve
from agent.events import (
    ApprovalRequested,
    Event,
    HistoryReplaced,
    MessageAppended,
    Metrics,
    Notice,
    TextDelta,
    TurnFinished,
    TurnStarted,
)
from agent.permissions import rule_for_call

if TYPE_CHECKING:
    from agent.checkpoints import CheckpointStore
    from server.manager import ServerHandle
    from server.supervisor import SupervisorStatus
    from tools.base import ToolContext
    from tools.mcp import McpManager
    from tui.runtime import RuntimeFactory

# Realistic Markdown: paragraphs, a list, a code fence, so the stream exercises block parsing.
PARAGRAPHS = [
    "The function walks the list once and keeps a running total, so it is **O(n)** in time.",
    "Edge cases:\n\n- an empty list returns `0`\n- negative numbers are fine\n- floats keep their precision",
    "```python\ndef total(values: list[float]) -> float:\n    result = 0.0\n    for value in values:\n"
    "        result += value\n    return result\n```",
    "## Testing\n\nRun `pytest -q` after the change; the new test covers the empty list.",
]


def synthetic_tokens(count: int) -> list[str]:
    """``count`` word-sized tokens that add up to well-formed Markdown."""
    source = "\n\n".join(PARAGRAPHS) + "\n\n"
    words: list[str] = []
    for piece in source.split(" "):
        words.append(piece + " ")
    tokens: list[str] = []
    while len(tokens) < count:
        tokens.extend(words)
    return tokens[:count]


@dataclass
class _Policy:
    mode: str = "ask"


@dataclass
class SyntheticAgent:
    tokens_per_second: float = 2000.0
    tokens: int = 200
    n_ctx: int | None = 8192
    speculative: bool = True
    # Tokens per event: llama-server sends one token per chunk; 1 models that.
    tokens_per_event: int = 1
    totals: dict[str, int] = field(
        default_factory=lambda: {"prompt_tokens": 0, "completion_tokens": 0, "tool_calls": 0}
    )
    messages: list[dict[str, Any]] = field(default_factory=lambda: [{"role": "system", "content": "synthetic"}])
    policy: _Policy = field(default_factory=_Policy)
    # A workspace for @file and !command; None: the TUI offers neither.
    tool_ctx: ToolContext | None = None
    # A bash command each turn asks approval for before it answers; the answers are kept.
    ask_for: str | None = None
    answers: list[str] = field(default_factory=list)
    approve: Approve | None = None
    emitted: int = 0
    # Stop after this many tokens (their Metrics included) until ``resume`` is set: tests look at
    # the screen in the middle of a turn.
    pause_after: int | None = None
    resume: asyncio.Event = field(default_factory=asyncio.Event)
    # When the first and the last token were handed to the consumer (for the benchmark).
    first_token_at: float | None = None
    last_token_at: float | None = None

    async def run_turn(self, user_text: str) -> AsyncIterator[Event]:
        turn = sum(1 for m in self.messages if m["role"] == "user") + 1
        yield TurnStarted(turn, user_text)
        self.messages.append({"role": "user", "content": user_text})
        yield MessageAppended(self.messages[-1])
        if self.ask_for is not None:
            arguments = {"command": self.ask_for}
            reason = "ask mode: bash needs approval"
            rule = rule_for_call("bash", self.ask_for)
            request = ApprovalRequest(f"ask_{turn}", "bash", self.ask_for, arguments, reason, None, rule)
            yield ApprovalRequested(**vars(request))
            assert self.approve is not None, "the TUI supplies approve when the runtime arrives"
            self.answers.append((await self.approve(request)).answer)
        text = synthetic_tokens(self.tokens)
        start = time.monotonic()
        prompt_n = 600
        for index in range(0, len(text), self.tokens_per_event):
            # Pace by the clock, not by sleeping a fixed step: the rate holds even if the UI is slow
            # to take each event, which is what the benchmark measures.
            due = start + index / self.tokens_per_second
            delay = due - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            fragment = "".join(text[index : index + self.tokens_per_event])
            produced = min(index + self.tokens_per_event, len(text))
            self.emitted = produced
            if self.first_token_at is None:
                self.first_token_at = time.monotonic()
            yield TextDelta(fragment)
            elapsed = max(time.monotonic() - start, 1e-6)
            drafted = produced if self.speculative else None
            yield Metrics(
                predicted_n=produced,
                predicted_per_second=produced / elapsed,
                prompt_n=prompt_n,
                cache_n=0,
                prompt_per_second=3000.0,
                draft_n=drafted,
                draft_n_accepted=None if drafted is None else int(drafted * 0.7),
                context_used=prompt_n + produced,
                n_ctx=self.n_ctx,
            )
            if produced == self.pause_after:
                await self.resume.wait()
        self.last_token_at = time.monotonic()
        answer = "".join(text)
        self.messages.append({"role": "assistant", "content": answer})
        yield MessageAppended(self.messages[-1])
        self.totals["prompt_tokens"] += prompt_n
        self.totals["completion_tokens"] += len(text)
        yield TurnFinished("done", answer, 1, prompt_n, len(text))

    async def compact_now(self) -> AsyncIterator[Event]:
        yield Notice("compacted the conversation (asked for)")
        yield HistoryReplaced(list(self.messages))

    def clear(self) -> Event:
        self.messages = self.messages[:1]
        return HistoryReplaced(list(self.messages))

    def set_mode(self, mode: str) -> None:
        self.policy = _Policy(mode)


@dataclass
class SyntheticRuntime:
    agent: SyntheticAgent
    server: ServerHandle | None = None
    session_id: str = "synthetic"
    checkpoints: CheckpointStore | None = None
    base_url: str = "synthetic://"
    api_key: str | None = None
    mcp: McpManager | None = None
    notes: list[str] = field(default_factory=list)
    closed: bool = False
    # (label, file) where rules can be saved; [] offers no saving.
    rule_files: list[tuple[str, Path]] = field(default_factory=list)
    # What rule_note says for each file (absent: nothing).
    rule_notes: dict[Path, str] = field(default_factory=dict)

    async def close(self) -> None:
        self.closed = True

    # -- RuleStore ---------------------------------------------------------------------------------

    def rule_targets(self) -> list[tuple[str, Path]]:
        return list(self.rule_files)

    def preview_rule(self, rule: str, target: Path) -> str:
        before, after = _rule_file_texts(rule, target)
        lines = difflib.unified_diff(
            before.splitlines(keepends=True), after.splitlines(keepends=True), f"a/{target.name}", f"b/{target.name}"
        )
        return "".join(lines)

    def rule_note(self, target: Path) -> str | None:
        return self.rule_notes.get(target)

    def save_rule(self, rule: str, target: Path) -> None:
        _, after = _rule_file_texts(rule, target)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(after, encoding="utf-8")


def _rule_file_texts(rule: str, target: Path) -> tuple[str, str]:
    """The file as it is and with `rule` among its allowed rules (TOML, one table)."""
    before = target.read_text(encoding="utf-8") if target.is_file() else ""
    allowed = list(tomllib.loads(before).get("agent", {}).get("permissions", {}).get("allow", [])) if before else []
    if rule not in allowed:
        allowed.append(rule)
    items = "".join(f"    {json.dumps(item)},\n" for item in allowed)
    return before, f"[agent.permissions]\nallow = [\n{items}]\n"


def factory_for(runtime: SyntheticRuntime) -> RuntimeFactory:
    """A runtime factory that hands back ``runtime`` at once."""

    async def build(on_status: Callable[[SupervisorStatus], None]) -> SyntheticRuntime:
        return runtime

    return build
