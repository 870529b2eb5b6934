"""Screenshots of the TUI, compared with the accepted SVGs in tests/__snapshots__/.

No network: a synthetic runtime stands in for the server and canned events go straight into the
widgets, with fixed durations and timestamps, so every run draws the same screen. Regenerate with
``pytest tests/test_tui_snapshots.py --snapshot-update`` and look at the SVGs before committing.
"""

from __future__ import annotations

from textual.pilot import Pilot

from agent.approval import ApprovalRequest
from agent.events import (
    ApprovalRequested,
    MessageAppended,
    Metrics,
    ReasoningDelta,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
    TurnFinished,
    TurnStarted,
)
from agent.permissions import rule_for_call
from server.telemetry import MetricsSnapshot, ServerInfo, ServerStats
from tests.support.synthetic_runtime import SyntheticAgent, SyntheticRuntime, factory_for
from tui.app import LocalAgentApp
from tui.screens.approval import ApprovalScreen
from tui.widgets.assistant_message import AssistantMessage

SIZE = (120, 40)

ANSWER = """## What changed

The parser now keeps **line endings** as they were, so a round trip is byte-exact.

- `read()` opens files in binary mode
- `write()` no longer normalises `\\r\\n`

```python
def read(path):
    return path.read_bytes()
```
"""

EDIT_DIFF = """--- a/calc.py
+++ b/calc.py
@@ -1,3 +1,3 @@
 def add(a, b):
-    return a - b
+    return a + b
 
"""


def make_app(speculative: bool = True) -> LocalAgentApp:
    agent = SyntheticAgent(speculative=speculative)
    agent.totals.update(prompt_tokens=1234, completion_tokens=321, tool_calls=2)
    return LocalAgentApp(
        factory_for(SyntheticRuntime(agent, session_id="20250101-snapshot")), label="tiny", telemetry=False
    )


async def settle(pilot: Pilot) -> LocalAgentApp:
    app = pilot.app
    assert isinstance(app, LocalAgentApp)
    await pilot.pause()
    while app.runtime is None or app.screen is not app.chat:
        await pilot.pause(0.02)
    app.chat.prompt.cursor_blink = False
    await pilot.pause()
    return app


async def shown(pilot: Pilot) -> None:
    """Until the answers show all their text: it is handed to the Markdown stream on a timer."""
    app = pilot.app
    assert isinstance(app, LocalAgentApp)
    while any(answer.source != answer.text for answer in app.chat.query(AssistantMessage)):
        await pilot.pause(0.05)
    await pilot.pause()


def metrics(predicted: int, tps: float, drafted: int | None, accepted: int | None) -> Metrics:
    return Metrics(
        predicted_n=predicted,
        predicted_per_second=tps,
        prompt_n=180,
        cache_n=1620,
        prompt_per_second=2456.0,
        draft_n=drafted,
        draft_n_accepted=accepted,
        context_used=1800 + predicted,
        n_ctx=8192,
    )


async def feed_metrics(app: LocalAgentApp, speculative: bool) -> None:
    panel = app.chat.metrics
    for step in range(1, 41):
        drafted = step * 6 if speculative else None
        accepted = step * 4 if speculative else None
        panel.record(metrics(step * 8, 40.0 + (step % 9) * 6.5, drafted, accepted), now=step * 0.1)
    stats = ServerStats(
        at=0.0,
        info=ServerInfo(n_ctx=8192, speculative=speculative),
        metrics=MetricsSnapshot(
            draft_tokens_total=2400.0 if speculative else None,
            accepted_tokens_total=1560.0 if speculative else None,
            drafts_total=600.0 if speculative else None,
            accepted_per_position=(540.0, 420.0, 330.0, 270.0) if speculative else (),
        ),
    )
    panel.apply_stats(stats)
    panel.model.set_totals({"prompt_tokens": 1234, "completion_tokens": 321, "tool_calls": 2})
    panel.refresh_now()


async def stream_answer(app: LocalAgentApp, finish: bool) -> None:
    chat = app.chat
    await chat.conversation.add_user("Keep line endings when reading and writing files.")
    await chat.show_event(TurnStarted(1, "Keep line endings when reading and writing files."))
    await chat.show_event(ReasoningDelta("The user wants byte-exact round trips. "))
    await chat.show_event(ReasoningDelta("Binary mode does that."))
    for index in range(0, len(ANSWER), 7):
        await chat.show_event(TextDelta(ANSWER[index : index + 7]))
    if finish:
        await chat.show_event(MessageAppended({"role": "assistant", "content": ANSWER}))
        await chat.show_event(TurnFinished("done", ANSWER, 1, 1800, 320))


def test_empty_session(snap_compare):
    async def run_before(pilot: Pilot) -> None:
        await settle(pilot)

    assert snap_compare(make_app(), terminal_size=SIZE, run_before=run_before)


def test_streaming_answer(snap_compare):
    async def run_before(pilot: Pilot) -> None:
        app = await settle(pilot)
        await stream_answer(app, finish=False)
        await feed_metrics(app, speculative=True)
        await shown(pilot)

    assert snap_compare(make_app(), terminal_size=SIZE, run_before=run_before)


def test_tool_call_with_a_diff(snap_compare):
    async def run_before(pilot: Pilot) -> None:
        app = await settle(pilot)
        chat = app.chat
        await chat.conversation.add_user("Fix add() in calc.py.")
        await chat.show_event(TurnStarted(1, "Fix add() in calc.py."))
        arguments = {"path": "calc.py", "old_string": "a - b", "new_string": "a + b"}
        await chat.show_event(ToolCallStarted("call_1", "edit", arguments, "calc.py"))
        await chat.show_event(
            ToolCallFinished("call_1", "edit", "Edited calc.py: 1 line changed.", False, 0.12, {"diff": EDIT_DIFF})
        )
        log = "\n".join(f"test_{n} PASSED" for n in range(14))
        await chat.show_event(ToolCallStarted("call_2", "bash", {"command": "pytest -q"}, "pytest -q"))
        await chat.show_event(ToolCallFinished("call_2", "bash", log, False, 1.5))
        await chat.show_event(ToolCallFinished("call_3", "view", "Error: no file named nope.py", True, 0.0))
        await feed_metrics(app, speculative=True)
        await pilot.pause()

    assert snap_compare(make_app(), terminal_size=SIZE, run_before=run_before)


def test_approval_modal(snap_compare):
    async def run_before(pilot: Pilot) -> None:
        app = await settle(pilot)
        await app.chat.conversation.add_user("Fix add() in calc.py.")
        arguments = {"path": "calc.py", "old_string": "a - b", "new_string": "a + b"}
        await app.chat.show_event(ToolCallStarted("call_1", "edit", arguments, "calc.py"))
        request = ApprovalRequest(
            "call_1",
            "edit",
            "calc.py",
            arguments,
            "ask mode: edit needs approval",
            EDIT_DIFF,
            rule_for_call("edit", "calc.py"),
        )
        await app.chat.show_event(ApprovalRequested(**vars(request)))
        app.push_screen(ApprovalScreen(request))
        await pilot.pause(0.1)

    assert snap_compare(make_app(), terminal_size=SIZE, run_before=run_before)


def test_metrics_panel_with_speculative_decoding(snap_compare):
    async def run_before(pilot: Pilot) -> None:
        app = await settle(pilot)
        await stream_answer(app, finish=True)
        await feed_metrics(app, speculative=True)
        await shown(pilot)

    assert snap_compare(make_app(speculative=True), terminal_size=SIZE, run_before=run_before)


def test_metrics_panel_without_speculative_decoding(snap_compare):
    async def run_before(pilot: Pilot) -> None:
        app = await settle(pilot)
        await stream_answer(app, finish=True)
        await feed_metrics(app, speculative=False)
        await shown(pilot)

    assert snap_compare(make_app(speculative=False), terminal_size=SIZE, run_before=run_before)


def test_approval_modal_with_saving(snap_compare, tmp_path):
    """Where the runtime can save rules: allow always for the session, or save it to a config."""

    async def run_before(pilot: Pilot) -> None:
        app = await settle(pilot)
        await app.chat.conversation.add_user("Run the tests.")
        arguments = {"command": "pytest -q tests/test_calc.py"}
        await app.chat.show_event(ToolCallStarted("call_1", "bash", arguments, arguments["command"]))
        request = ApprovalRequest(
            "call_1",
            "bash",
            arguments["command"],
            arguments,
            "ask mode: bash needs approval",
            None,
            rule_for_call("bash", arguments["command"]),
        )
        await app.chat.show_event(ApprovalRequested(**vars(request)))
        app.push_screen(ApprovalScreen(request, app.runtime))  # type: ignore[arg-type]  # the synthetic runtime stands in for the rule store
        await pilot.pause(0.1)

    agent = SyntheticAgent()
    targets = [("user config", tmp_path / "user.toml"), ("project config", tmp_path / "project.toml")]
    runtime = SyntheticRuntime(agent, session_id="20250101-snapshot", rule_files=targets)
    app = LocalAgentApp(factory_for(runtime), label="tiny", telemetry=False)
    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_file_picker(snap_compare, tmp_path):
    """Typing @ opens the picker over the workspace's files, narrowed by what is typed."""
    from tools.base import ToolContext
    from tui.screens.file_picker import FilePickerScreen

    for name in ("src/calc.py", "src/cli.py", "tests/test_calc.py", "README.md", "docs/calculus.md"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x\n")

    async def run_before(pilot: Pilot) -> None:
        app = await settle(pilot)
        await pilot.press("@")
        while not (isinstance(app.screen, FilePickerScreen) and app.screen.loaded):
            await pilot.pause(0.02)
        await pilot.press("c", "a", "l", "c")
        app.screen.query_one("Input").cursor_blink = False
        await pilot.pause(0.1)

    agent = SyntheticAgent(tool_ctx=ToolContext(workspace=tmp_path, scratch_dir=tmp_path / ".scratch"))
    app = LocalAgentApp(
        factory_for(SyntheticRuntime(agent, session_id="20250101-snapshot")), label="tiny", telemetry=False
    )
    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)
