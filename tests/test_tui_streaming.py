"""A streamed answer through the real app (Textual's pilot, the synthetic runtime): the session
token totals count live during a turn and end exact, and an answer shown in batches ends
complete and identical, whether the turn ends or is cancelled mid-stream."""

from __future__ import annotations

import time
from collections.abc import Callable

from textual.pilot import Pilot
from textual.selection import Selection
from textual.widgets import Static

from agent.events import TextDelta
from tests.support.synthetic_runtime import (
    SyntheticAgent,
    SyntheticRuntime,
    factory_for,
    synthetic_tokens,
)
from tui.app import LocalAgentApp
from tui.widgets.assistant_message import AssistantMessage
from tui.widgets.streamed_markdown import MarkdownLines

SIZE = (140, 44)


async def wait_for(pilot: Pilot, predicate: Callable[[], object], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not met in time"
        await pilot.pause(0.02)


async def started(pilot: Pilot, text: str = "go") -> LocalAgentApp:
    app = pilot.app
    assert isinstance(app, LocalAgentApp)
    await wait_for(pilot, lambda: app.runtime is not None and app.screen is app.chat)
    before = app.chat.submissions
    app.chat.prompt.text = text
    await pilot.press("enter")
    await wait_for(pilot, lambda: app.chat.submissions > before)
    return app


def session_line(app: LocalAgentApp) -> str:
    """The session totals as the metrics panel draws them."""
    return str(app.chat.query_one("#m-session", Static).render()).splitlines()[-1]


def last_drawn_line(answer: AssistantMessage) -> str:
    """The last line with text in it that the answer's widgets have drawn."""
    parts = [chunk.get_selection(Selection(None, None)) for chunk in answer.query(MarkdownLines)]
    lines = "\n".join(part[0] for part in parts if part).splitlines()
    return [line.strip() for line in lines if line.strip()][-1]


async def test_session_totals_count_live_during_a_turn_and_end_exact():
    agent = SyntheticAgent(tokens=300, tokens_per_second=3000, pause_after=120)
    agent.totals.update(prompt_tokens=1000, completion_tokens=50)
    app = LocalAgentApp(factory_for(SyntheticRuntime(agent)), telemetry=False)
    async with app.run_test(size=SIZE) as pilot:
        await started(pilot)
        await wait_for(pilot, lambda: agent.emitted == 120)
        model = app.chat.metrics.model
        # Mid-turn: the agent has counted nothing yet, the panel already has the request so far.
        assert agent.totals["completion_tokens"] == 50
        await wait_for(pilot, lambda: session_line(app) == "1,600 prompt · 170 completion")
        assert (model.session_prompt_tokens, model.session_completion_tokens) == (
            1600,
            170,
        )

        agent.resume.set()
        await wait_for(pilot, lambda: not app.chat.turn_running)
        await pilot.pause(0.3)
        # The end of the turn: the agent's own count, the turn's tokens counted once.
        assert agent.totals == {
            "prompt_tokens": 1600,
            "completion_tokens": 350,
            "tool_calls": 0,
        }
        assert (model.session_prompt_tokens, model.session_completion_tokens) == (
            1600,
            350,
        )
        assert session_line(app) == "1,600 prompt · 350 completion"


async def test_totals_of_the_next_turn_start_from_the_exact_ones():
    agent = SyntheticAgent(tokens=40, tokens_per_second=4000)
    app = LocalAgentApp(factory_for(SyntheticRuntime(agent)), telemetry=False)
    async with app.run_test(size=SIZE) as pilot:
        await started(pilot, "one")
        await wait_for(pilot, lambda: not app.chat.turn_running)
        agent.pause_after = 10
        await started(pilot, "two")
        await wait_for(pilot, lambda: agent.emitted == 10)
        model = app.chat.metrics.model
        assert (model.session_prompt_tokens, model.session_completion_tokens) == (
            1200,
            50,
        )
        agent.resume.set()
        await wait_for(pilot, lambda: not app.chat.turn_running)
        assert (model.session_prompt_tokens, model.session_completion_tokens) == (
            1200,
            80,
        )
        assert model.turns == 2


async def test_a_fast_stream_ends_complete_and_identical_after_batching():
    agent = SyntheticAgent(tokens=3000, tokens_per_second=20_000)
    app = LocalAgentApp(factory_for(SyntheticRuntime(agent)), telemetry=False)
    async with app.run_test(size=SIZE) as pilot:
        await started(pilot)
        await wait_for(pilot, lambda: not app.chat.turn_running)
        await pilot.pause(0.1)  # the last widget's first layout
        [answer] = app.chat.query(AssistantMessage)
        expected = "".join(synthetic_tokens(3000))
        assert answer.text == answer.source == expected
        assert not answer.streaming
        # Shown in several widgets, the newest last, all of it drawn.
        chunks = list(answer.query(MarkdownLines))
        assert len(chunks) > 1 and "".join(chunk.source for chunk in chunks) == expected
        # It ends inside a code block that is still open: drawn as code, up to the last token.
        assert expected.endswith("```python\ndef total(values: list[float]) -> float:\n  ")
        assert last_drawn_line(answer) == "def total(values: list[float]) -> float:"


async def test_a_cancelled_turn_shows_every_token_it_got_including_the_last_batch():
    agent = SyntheticAgent(tokens=2000, tokens_per_second=20_000, pause_after=777)
    app = LocalAgentApp(factory_for(SyntheticRuntime(agent)), telemetry=False)
    async with app.run_test(size=SIZE) as pilot:
        await started(pilot)
        await wait_for(pilot, lambda: agent.emitted == 777)
        await pilot.press("escape")
        await wait_for(pilot, lambda: not app.chat.turn_running)
        await pilot.pause(0.1)
        [answer] = app.chat.query(AssistantMessage)
        expected = "".join(synthetic_tokens(2000)[:777])
        assert answer.text == answer.source == expected
        assert not answer.streaming
        assert expected.endswith("in time.\n\nEdge ") and last_drawn_line(answer) == "Edge"
        model = app.chat.metrics.model
        # Cancelled before the agent counted the request: the live count goes back to the agent's.
        assert (model.session_prompt_tokens, model.session_completion_tokens) == (0, 0)


class EscapingAgent(SyntheticAgent):
    """A model and a tool that put terminal escape sequences in what the TUI shows."""

    async def run_turn(self, user_text: str):  # type: ignore[override]  # an async generator, as the runtime protocol expects
        from agent.events import ToolCallFinished, ToolCallStarted, TurnFinished, TurnStarted

        yield TurnStarted(1, user_text)
        yield ToolCallStarted("c1", "bash", {"command": "printf x"}, "printf \x1b[2Kfake\x07")
        yield ToolCallFinished("c1", "bash", "out\x1b]52;c;cm0=\x07put", False, 0.1)
        yield TextDelta("answer\x1b[2J\x1b]0;title\x07done")
        yield TurnFinished("done", "answer", 1, 10, 5)


async def test_escape_sequences_from_the_model_and_tools_are_shown_as_text_in_the_tui():
    from tui.widgets.tool_call_block import ToolCallBlock

    app = LocalAgentApp(factory_for(SyntheticRuntime(EscapingAgent())), telemetry=False)
    async with app.run_test(size=SIZE) as pilot:
        await started(pilot)
        await wait_for(pilot, lambda: not app.chat.turn_running)
        [answer] = app.chat.query(AssistantMessage)
        [block] = app.chat.query(ToolCallBlock)
        for shown in (answer.text, block.summary, block.output or ""):
            assert "\x1b" not in shown and "\x07" not in shown, shown
        assert answer.text == "answer\\x1b[2J\\x1b]0;title\\adone"
        assert block.output == "out\\x1b]52;c;cm0=\\aput"
