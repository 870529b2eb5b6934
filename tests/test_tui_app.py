"""The TUI driven with Textual's pilot against the scripted model server (real HTTP, real agent)."""

from __future__ import annotations

import asyncio
import subprocess
import time
from collections.abc import Callable

import pytest
from textual.pilot import Pilot

from agent.prompt import without_context
from localagent.agent_setup import AgentOptions, build_agent
from localagent.context import AppContext
from localagent.errors import UsageError
from server.supervisor import ServerState, SupervisorStatus
from tests.support.fake_engines import FakeEngine
from tests.support.scripted_model import ScriptedModelServer, ScriptedToolCall, ScriptedTurn
from tests.support.synthetic_runtime import SyntheticAgent, SyntheticRuntime, factory_for
from tui.app import LocalAgentApp
from tui.screens.approval import ApprovalScreen
from tui.screens.loading import LoadingScreen
from tui.widgets.assistant_message import AssistantMessage
from tui.widgets.diff_view import DiffView
from tui.widgets.notice_line import NoticeLine
from tui.widgets.tool_call_block import ToolCallBlock
from tui.widgets.user_message import UserMessage

SIZE = (140, 44)


def call(name: str, **arguments) -> ScriptedTurn:
    return ScriptedTurn(tool_calls=[ScriptedToolCall(name, arguments)])


def scripted_app(la_env, model: ScriptedModelServer, mode: str) -> LocalAgentApp:
    ctx = AppContext.load(la_env.workspace)
    options = AgentOptions(base_url=model.base_url, mode=mode)
    return LocalAgentApp(lambda on_status: build_agent(ctx, options, on_status), label="scripted", poll_interval=0.2)


async def wait_for(pilot: Pilot, predicate: Callable[[], object], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            app = pilot.app
            seen = notices(app) if isinstance(app, LocalAgentApp) and app.runtime is not None else []
            raise AssertionError(f"condition not met in time; screen {app.screen!r}; notices {seen}")
        await pilot.pause(0.05)


async def ready(pilot: Pilot) -> LocalAgentApp:
    app = pilot.app
    assert isinstance(app, LocalAgentApp)
    await wait_for(pilot, lambda: app.runtime is not None and app.screen is app.chat)
    return app


async def submit(pilot: Pilot, text: str) -> None:
    """Type ``text`` and press Enter; return once the chat screen has taken it."""
    chat = pilot.app.chat  # type: ignore[attr-defined]  # the pilot holds our app
    before = chat.submissions
    chat.prompt.text = text
    await pilot.press("enter")
    await wait_for(pilot, lambda: chat.submissions > before)


async def turn_done(pilot: Pilot) -> None:
    app = pilot.app
    assert isinstance(app, LocalAgentApp)
    await wait_for(pilot, lambda: not app.chat.turn_running)
    await pilot.pause(0.1)


def notices(app: LocalAgentApp) -> list[str]:
    return [line.text for line in app.chat.query(NoticeLine)]


async def test_a_full_turn_with_a_tool_call_streams_markdown_and_live_metrics(la_env):
    turns = [
        call("create", path="hello.py", content="print('hi')\n"),
        ScriptedTurn(text="Created **hello.py**: it prints `hi`.\n\n- one file\n- one line\n", chunk_size=4),
    ]
    async with ScriptedModelServer(turns, speculative=True) as model:
        app = scripted_app(la_env, model, "full-auto")
        async with app.run_test(size=SIZE) as pilot:
            await ready(pilot)
            await submit(pilot, "Create hello.py")
            await turn_done(pilot)

            assert (la_env.workspace / "hello.py").read_text() == "print('hi')\n"
            assert [m.text for m in app.chat.query(UserMessage)] == ["Create hello.py"]
            [block] = app.chat.query(ToolCallBlock)
            assert block.tool_name == "create" and block.state == "ok" and block.duration_s is not None
            diff = block.query_one(DiffView).diff
            assert "+print('hi')" in diff
            answer = app.chat.query(AssistantMessage).last()
            assert answer.source == answer.text == turns[1].text
            assert not answer.streaming
            model_metrics = app.chat.metrics.model
            assert model_metrics.generation_tps and model_metrics.generation_tps > 0
            assert model_metrics.drafted > 0 and model_metrics.acceptance is not None
            assert model_metrics.turns == 1 and model_metrics.tool_calls == 1
            assert any(text.startswith("done · 2 steps") for text in notices(app))
    assert app.runtime is not None


async def test_approval_modal_allows_once_then_always_and_denies(la_env):
    turns = [
        call("bash", command="echo one > approved.txt"),
        ScriptedTurn(text="ran it"),
        call("bash", command="echo two > approved.txt"),
        ScriptedTurn(text="ran it again"),
        call("bash", command="touch denied.txt"),
        ScriptedTurn(text="it was denied"),
    ]
    async with ScriptedModelServer(turns) as model:
        app = scripted_app(la_env, model, "ask")
        async with app.run_test(size=SIZE) as pilot:
            await ready(pilot)
            await submit(pilot, "Write approved.txt")
            await wait_for(pilot, lambda: isinstance(app.screen, ApprovalScreen))
            modal = app.screen
            assert isinstance(modal, ApprovalScreen)
            assert str(modal.query_one("#command").content) == "echo one > approved.txt"
            assert app.chat.query_one(ToolCallBlock).state == "waiting"
            await pilot.press("y")
            await turn_done(pilot)
            assert (la_env.workspace / "approved.txt").read_text().strip() == "one"

            await submit(pilot, "Again")
            await wait_for(pilot, lambda: isinstance(app.screen, ApprovalScreen))
            await pilot.press("a")  # allow always: adds a rule for `echo`
            await turn_done(pilot)
            assert (la_env.workspace / "approved.txt").read_text().strip() == "two"
            assert any("echo" in rule.text for rule in app.runtime.agent.policy.rules.allow)  # type: ignore[union-attr]  # the runtime is attached by now

            await submit(pilot, "Now touch")
            await wait_for(pilot, lambda: isinstance(app.screen, ApprovalScreen))
            await pilot.press("n")
            await turn_done(pilot)
            assert not (la_env.workspace / "denied.txt").exists()
            denied = app.chat.query(ToolCallBlock).last()
            assert denied.state == "error" and "denied" in (denied.output or "")
        tool_results = [m["content"] for m in model.requests[-1]["messages"] if m["role"] == "tool"]
        assert "denied" in tool_results[-1]


async def test_undo_restores_the_files_and_diff_shows_the_change(la_env):
    subprocess.run(["git", "init", "-q"], cwd=la_env.workspace, check=True)
    (la_env.workspace / "notes.txt").write_text("v1\n")
    turns = [
        call("view", path="notes.txt"),
        call("edit", path="notes.txt", old_string="v1", new_string="v2"),
        call("create", path="new.txt", content="made\n"),
        ScriptedTurn(text="edited"),
    ]
    async with ScriptedModelServer(turns) as model:
        app = scripted_app(la_env, model, "full-auto")
        async with app.run_test(size=SIZE) as pilot:
            await ready(pilot)
            await submit(pilot, "Edit notes")
            await turn_done(pilot)
            assert (la_env.workspace / "notes.txt").read_text() == "v2\n"
            edit_block = [b for b in app.chat.query(ToolCallBlock) if b.tool_name == "edit"][0]
            assert "-v1" in edit_block.query_one(DiffView).diff

            await submit(pilot, "/diff")
            await wait_for(pilot, lambda: len(app.chat.conversation.query(DiffView)) > 2)
            session_diff = app.chat.conversation.query(DiffView).last().diff
            assert "+v2" in session_diff and "new.txt" in session_diff

            await submit(pilot, "/undo")
            await wait_for(pilot, lambda: any(t.startswith("restored the files") for t in notices(app)))
            assert (la_env.workspace / "notes.txt").read_text() == "v1\n"
            assert not (la_env.workspace / "new.txt").exists()

            await submit(pilot, "/undo")
            await wait_for(pilot, lambda: "nothing to undo in this session" in notices(app))


async def test_escape_cancels_a_streaming_turn_and_the_session_goes_on(la_env):
    slow = ScriptedTurn(text="word " * 400, chunk_size=5, chunk_delay=0.02)
    async with ScriptedModelServer([slow, ScriptedTurn(text="second answer")]) as model:
        app = scripted_app(la_env, model, "ask")
        async with app.run_test(size=SIZE) as pilot:
            await ready(pilot)
            await submit(pilot, "Talk for a while")
            await wait_for(pilot, lambda: len(app.chat.query(AssistantMessage)) > 0)
            await pilot.press("escape")
            await turn_done(pilot)
            assert "cancelled; the conversation is kept" in notices(app)
            partial = app.chat.query(AssistantMessage).last().text
            assert 0 < len(partial) < len(slow.text)

            await submit(pilot, "And now?")
            await turn_done(pilot)
            assert app.chat.query(AssistantMessage).last().text == "second answer"
        contents = [without_context(str(m.get("content"))) for m in model.requests[-1]["messages"]]
        assert "Talk for a while" in contents and contents[-1] == "And now?"


async def test_ctrl_c_cancels_a_running_turn_then_twice_on_idle_quits():
    runtime = SyntheticRuntime(SyntheticAgent(tokens=100_000, tokens_per_second=500))
    app = LocalAgentApp(factory_for(runtime), telemetry=False)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await submit(pilot, "go")
        await wait_for(pilot, lambda: app.chat.turn_running and runtime.agent.emitted > 0)
        await pilot.press("ctrl+c")
        await turn_done(pilot)
        assert "cancelled; the conversation is kept" in notices(app)
        assert not runtime.closed
        await pilot.press("ctrl+c")
        assert app.is_running and not runtime.closed
        await pilot.press("ctrl+c")
        await wait_for(pilot, lambda: runtime.closed)
    assert app.return_code == 0


def user_turns(runtime: SyntheticRuntime) -> int:
    return sum(1 for message in runtime.agent.messages if message["role"] == "user")


async def test_a_cancel_before_the_turn_begins_gives_the_message_back():
    runtime = SyntheticRuntime(SyntheticAgent(tokens=20, tokens_per_second=10_000))
    app = LocalAgentApp(factory_for(runtime), telemetry=False)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        chat = app.chat
        # Enter, then Ctrl+C before the turn's worker has run a line: nothing yields in between.
        await chat.send("fix the failing test")
        assert chat.action_cancel_turn()
        await wait_for(pilot, lambda: "cancelled before it was sent" in " ".join(notices(app)))
        assert chat.prompt.text == "fix the failing test"
        assert user_turns(runtime) == 0
        # Sent again, it runs as any turn does.
        chat.prompt.text = ""
        await submit(pilot, "fix the failing test")
        await turn_done(pilot)
        assert user_turns(runtime) == 1


async def test_loading_screen_shows_the_server_state_until_the_runtime_is_ready():
    release = asyncio.Event()
    runtime = SyntheticRuntime(SyntheticAgent())

    async def factory(on_status):
        on_status(SupervisorStatus(ServerState.STARTING))
        on_status(SupervisorStatus(ServerState.LOADING, pid=4242))
        await release.wait()
        on_status(SupervisorStatus(ServerState.READY, pid=4242))
        return runtime

    app = LocalAgentApp(factory, label="tiny", telemetry=False)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, LoadingScreen) and app.screen.state == "loading")
        assert app.runtime is None
        release.set()
        await ready(pilot)
        assert app.chat.metrics.model.server_state == "ready"
        assert app.chat.metrics.model.server_pid == 4242


async def test_a_failed_start_is_shown_and_q_quits_with_an_error():
    async def factory(on_status):
        raise UsageError("nothing answers at http://127.0.0.1:9/v1")

    app = LocalAgentApp(factory, telemetry=False)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.loading_screen.failed)
        assert "nothing answers" in str(app.loading_screen.query_one("#message").content)
        await pilot.press("q")
    assert isinstance(app.boot_error, UsageError)
    assert app.return_code == 1


async def test_slash_commands_and_prompt_history():
    runtime = SyntheticRuntime(SyntheticAgent(tokens=20, tokens_per_second=10_000))
    app = LocalAgentApp(factory_for(runtime), telemetry=False)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await submit(pilot, "/help")
        assert any("/undo" in text and "/server" in text for text in notices(app))
        await submit(pilot, "/mode full-auto")
        assert runtime.agent.policy.mode == "full-auto"
        await submit(pilot, "/mode sideways")
        assert any("unknown mode" in text for text in notices(app))
        await submit(pilot, "/server")
        assert any("--base-url" in text or "endpoint synthetic" in text for text in notices(app))
        await submit(pilot, "/server restart")
        await wait_for(pilot, lambda: any("not managed by this session" in text for text in notices(app)))
        await submit(pilot, "/mcp")
        assert any("no MCP servers are running" in text for text in notices(app))
        await submit(pilot, "/frobnicate")
        assert any("unknown command /frobnicate" in text for text in notices(app))
        await submit(pilot, "/undo")
        await wait_for(pilot, lambda: any("keeps no checkpoints" in text for text in notices(app)))

        await submit(pilot, "first prompt")
        await turn_done(pilot)
        await submit(pilot, "second\nprompt")
        await turn_done(pilot)
        assert len(app.chat.query(UserMessage)) == 2
        prompt = app.chat.prompt
        prompt.text = "draft"
        await pilot.press("up")
        assert prompt.text == "second\nprompt"
        await pilot.press("up", "up")  # the cursor is on the last line: first to the top, then back
        assert prompt.text == "first prompt"
        await pilot.press("down", "down")
        assert prompt.text == "draft"

        await submit(pilot, "/clear")
        assert len(app.chat.query(UserMessage)) == 0
        assert runtime.agent.messages == runtime.agent.messages[:1]
        await submit(pilot, "/compact")
        await wait_for(pilot, lambda: any("compacted" in text for text in notices(app)))


async def test_shift_enter_and_ctrl_j_make_new_lines_instead_of_sending():
    runtime = SyntheticRuntime(SyntheticAgent(tokens=5, tokens_per_second=10_000))
    app = LocalAgentApp(factory_for(runtime), telemetry=False)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await pilot.press("a", "ctrl+j", "b", "shift+enter", "c")
        assert app.chat.prompt.text == "a\nb\nc"
        assert len(app.chat.query(UserMessage)) == 0
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.chat.submissions == 1)
        await turn_done(pilot)
        assert [m.text for m in app.chat.query(UserMessage)] == ["a\nb\nc"]


async def test_a_repositorys_mcp_servers_start_only_after_the_user_agrees(la_env):
    import json
    import sys
    from pathlib import Path

    from tui.screens.mcp_approval import McpApprovalScreen

    echo_server = str(Path(__file__).parent / "mcp_servers" / "echo_server.py")
    (la_env.workspace / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"proj": {"command": sys.executable, "args": [echo_server]}}})
    )
    turns = [call("mcp__proj__echo", text="from the TUI"), ScriptedTurn(text="echoed")]
    async with ScriptedModelServer(turns) as model:
        ctx = AppContext.load(la_env.workspace)
        options = AgentOptions(base_url=model.base_url, mode="full-auto")

        async def factory(on_status):
            options.approve_project_mcp = app.approve_project_mcp
            return await build_agent(ctx, options, on_status)

        app = LocalAgentApp(factory, telemetry=False)
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: isinstance(app.screen, McpApprovalScreen))
            assert "proj" in str(app.screen.query_one("#servers").content)
            await pilot.press("y")
            await ready(pilot)
            await submit(pilot, "/mcp")
            assert any(text.startswith("proj (stdio, project): ready, ") for text in notices(app)), notices(app)
            await submit(pilot, "Echo something")
            await turn_done(pilot)
            [block] = app.chat.query(ToolCallBlock)
            assert block.tool_name == "mcp__proj__echo" and block.output == "from the TUI"


async def test_prompt_reading_shows_while_no_token_has_come_back(la_env):
    async with ScriptedModelServer([ScriptedTurn(text="late answer", delay_first_token=1.5)]) as model:
        app = scripted_app(la_env, model, "ask")
        async with app.run_test(size=SIZE) as pilot:
            await ready(pilot)
            await submit(pilot, "A long prompt")
            panel = app.chat.metrics
            await wait_for(pilot, lambda: panel.has_class("-reading"))
            assert "reading the prompt" in str(panel.query_one("#m-prompt").content)
            await turn_done(pilot)
            assert not panel.has_class("-reading")


async def test_resume_shows_the_earlier_conversation_and_its_prompts(la_env):
    first = [call("create", path="a.txt", content="1\n"), ScriptedTurn(text="made **a.txt**")]
    async with ScriptedModelServer(first) as model:
        app = scripted_app(la_env, model, "full-auto")
        async with app.run_test(size=SIZE) as pilot:
            await ready(pilot)
            await submit(pilot, "Make a.txt")
            await turn_done(pilot)
            session_id = app.runtime.session_id  # type: ignore[union-attr]  # the runtime is attached by now
    async with ScriptedModelServer([ScriptedTurn(text="resumed")]) as model:
        ctx = AppContext.load(la_env.workspace)
        options = AgentOptions(base_url=model.base_url, resume="last")
        app = LocalAgentApp(lambda on_status: build_agent(ctx, options, on_status), telemetry=False)
        async with app.run_test(size=SIZE) as pilot:
            await ready(pilot)
            assert app.runtime.session_id == session_id  # type: ignore[union-attr]  # the runtime is attached by now
            assert [m.text for m in app.chat.query(UserMessage)] == ["Make a.txt"]
            [block] = app.chat.query(ToolCallBlock)
            assert block.tool_name == "create" and block.state == "ok"
            assert app.chat.query(AssistantMessage).last().text == "made **a.txt**"
            await pilot.press("up")
            assert app.chat.prompt.text == "Make a.txt"


async def test_allow_always_saved_to_the_user_config_holds_in_the_next_session(la_env):
    from tui.screens.save_rule import SaveRuleScreen

    turns = [call("bash", command="echo saved > out.txt"), ScriptedTurn(text="done")]
    async with ScriptedModelServer(turns) as model:
        app = scripted_app(la_env, model, "ask")
        async with app.run_test(size=SIZE) as pilot:
            await ready(pilot)
            await submit(pilot, "Write out.txt")
            await wait_for(pilot, lambda: isinstance(app.screen, ApprovalScreen))
            await pilot.press("u")
            await wait_for(pilot, lambda: isinstance(app.screen, SaveRuleScreen))
            await pilot.press("y")
            await turn_done(pilot)
    assert (la_env.workspace / "out.txt").read_text().strip() == "saved"
    saved = AppContext.load(la_env.workspace).settings.agent.permissions.allow
    assert saved == ["bash(echo saved > out.txt)"]


async def test_on_a_vllm_endpoint_the_panel_shows_its_speed_and_acceptance(la_env):
    """vLLM sends no timings: tok/s comes from the usage counts, acceptance from its /metrics."""
    with FakeEngine("vllm") as engine:
        ctx = AppContext.load(la_env.workspace)
        options = AgentOptions(base_url=f"{engine.url}/v1", mode="full-auto")
        app = LocalAgentApp(lambda on_status: build_agent(ctx, options, on_status), label="vllm", poll_interval=0.2)
        async with app.run_test(size=SIZE) as pilot:
            await ready(pilot)
            await submit(pilot, "write add()")
            await turn_done(pilot)
            model_metrics = app.chat.metrics.model
            assert model_metrics.generation_tps and model_metrics.generation_tps > 0
            # The recorded vLLM page's counters, advanced by the fake's answer (2 drafted, 1 accepted a token).
            tokens = engine.generated
            expected = (1927 + tokens) / (4396 + 2 * tokens)
            await wait_for(pilot, lambda: model_metrics.server_acceptance == pytest.approx(expected))
            assert model_metrics.acceptance_by_position[0] == pytest.approx(515 / (628 + tokens))
            panel = app.chat.metrics
            total = f"server total {expected * 100:.1f} %"
            # The panel redraws on its own timer: wait for it to show what the model now holds.
            await wait_for(pilot, lambda: total in str(panel.query_one("#m-accept").render()))
            assert "vLLM counts drafts only in total:" in str(panel.query_one("#m-accept").render())
