"""The prompt's extras, driven with Textual's pilot: @file mentions and the picker, !command,
prompt history across sessions, /init, and saving an "allow always" rule to a config file."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.pilot import Pilot

from localagent.agent_setup import AgentOptions, build_agent
from localagent.context import AppContext
from tests.support.scripted_model import ScriptedModelServer, ScriptedToolCall, ScriptedTurn
from tests.support.synthetic_runtime import SyntheticAgent, SyntheticRuntime, factory_for
from tests.test_tui_app import SIZE, notices, ready, submit, turn_done, wait_for
from tools.base import ToolContext
from tools.sandbox import SandboxPolicy, sandbox_available
from tui.app import LocalAgentApp
from tui.attachments import CONTEXT_MARK
from tui.prompt_history import history_file_for
from tui.screens.approval import ApprovalScreen
from tui.screens.file_picker import FilePickerScreen
from tui.screens.save_rule import SaveRuleScreen
from tui.widgets.diff_view import DiffView
from tui.widgets.tool_call_block import ToolCallBlock
from tui.widgets.user_message import UserMessage


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "work"
    (root / "src").mkdir(parents=True)
    (root / "build").mkdir()
    (root / "src" / "app.py").write_text("print('app')\n")
    (root / "src" / "helpers.py").write_text("def helper(): ...\n")
    (root / "build" / "app_generated.py").write_text("# generated\n")
    (root / ".gitignore").write_text("build/\n")
    return root


def synthetic(workspace: Path, **runtime: object) -> SyntheticRuntime:
    ctx = ToolContext(workspace=workspace, scratch_dir=workspace.parent / "scratch")
    agent = SyntheticAgent(tokens=5, tokens_per_second=10_000, tool_ctx=ctx)
    return SyntheticRuntime(agent, **runtime)  # type: ignore[arg-type]  # keyword options passed through unchanged


def sent(runtime: SyntheticRuntime) -> list[str]:
    """What the model got as user messages."""
    return [m["content"] for m in runtime.agent.messages if m["role"] == "user"]


async def picker(pilot: Pilot) -> FilePickerScreen:
    await wait_for(pilot, lambda: isinstance(pilot.app.screen, FilePickerScreen) and pilot.app.screen.loaded)
    screen = pilot.app.screen
    assert isinstance(screen, FilePickerScreen)
    return screen


async def test_at_opens_a_fuzzy_picker_and_the_message_carries_the_file(workspace: Path) -> None:
    runtime = synthetic(workspace)
    app = LocalAgentApp(factory_for(runtime), telemetry=False)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        prompt = app.chat.prompt
        await pilot.press("l", "o", "o", "k", "space", "@")
        screen = await picker(pilot)
        assert "build/app_generated.py" not in screen.paths  # .gitignore holds, as for grep
        assert set(screen.paths) == {".gitignore", "src/app.py", "src/helpers.py"}
        await pilot.press("a", "p", "p")
        await pilot.pause()
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.screen is app.chat)
        assert prompt.text == "look @src/app.py "
        await pilot.press("n", "o", "w")
        await pilot.press("enter")
        await turn_done(pilot)

        assert [m.text for m in app.chat.query(UserMessage)] == ["look @src/app.py now"]
        assert any(text.startswith("attached src/app.py (13 chars)") for text in notices(app))
        (message,) = sent(runtime)
        assert message.startswith("look @src/app.py now\n\n" + CONTEXT_MARK)
        assert "File src/app.py" in message and "```\nprint('app')\n```" in message

        # Esc leaves the @ as typed; an @ inside a word opens nothing.
        prompt.text = ""
        await pilot.press("@")
        await picker(pilot)
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is app.chat)
        assert prompt.text == "@"
        await pilot.press("x", "@")
        await pilot.pause()
        assert app.screen is app.chat and prompt.text == "@x@"


async def test_a_mention_out_of_the_workspace_is_refused_and_the_prompt_kept(workspace: Path) -> None:
    secret = workspace.parent / "secret.txt"
    secret.write_text("hunter2\n")
    (workspace / "link.txt").symlink_to(secret)
    runtime = synthetic(workspace)
    app = LocalAgentApp(factory_for(runtime), telemetry=False)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        for mention in ("@link.txt", "@../secret.txt"):
            await submit(pilot, f"summarise {mention}")
            assert app.chat.prompt.text == f"summarise {mention}"
            app.chat.prompt.text = ""
        said = notices(app)
        assert any("through a symlink" in text for text in said)
        assert any("outside the workspace" in text for text in said)
        assert sum("not sent" in text for text in said) == 2
        assert sent(runtime) == [] and len(app.chat.query(UserMessage)) == 0

        await submit(pilot, "ping @someone about @src/app.py")
        await turn_done(pilot)
        (message,) = sent(runtime)
        assert "hunter2" not in message and "print('app')" in message


async def test_bang_runs_a_command_and_the_next_message_shows_the_model_its_output(workspace: Path) -> None:
    runtime = synthetic(workspace)
    app = LocalAgentApp(factory_for(runtime), telemetry=False)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await submit(pilot, "!echo hello > made.txt && cat made.txt && pwd")
        await wait_for(pilot, lambda: not app.chat.turn_running)
        (block,) = app.chat.query(ToolCallBlock)
        assert block.tool_name == "!" and block.state == "ok"
        assert "hello" in (block.output or "") and str(workspace.resolve()) in (block.output or "")
        assert (workspace / "made.txt").read_text() == "hello\n"
        assert sent(runtime) == []  # no turn: the output waits for the next message

        await submit(pilot, "!exit 3")
        await wait_for(pilot, lambda: not app.chat.turn_running)
        assert app.chat.query(ToolCallBlock).last().state == "error"

        await submit(pilot, "what did I run?")
        await turn_done(pilot)
        (message,) = sent(runtime)
        assert message.startswith("what did I run?\n\n" + CONTEXT_MARK)
        assert message.index("echo hello > made.txt") < message.index("exit 3")
        assert "[exit code: 3]" in message
        assert [m.text for m in app.chat.query(UserMessage)] == ["what did I run?"]

        await submit(pilot, "!!not a command")
        await turn_done(pilot)
        assert sent(runtime)[-1] == "!not a command"  # nothing pending any more
        await submit(pilot, "!")
        assert any("!command runs a shell command" in text for text in notices(app))


@pytest.mark.skipif(not sandbox_available(SandboxPolicy("read-only")), reason="needs the Landlock sandbox")
async def test_bang_runs_inside_the_agents_sandbox_with_its_environment(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEPLOY_TOKEN", "do-not-leak")
    runtime = synthetic(workspace)
    assert runtime.agent.tool_ctx is not None
    runtime.agent.tool_ctx.sandbox = SandboxPolicy("read-only")  # as in the agent's read-only mode
    app = LocalAgentApp(factory_for(runtime), telemetry=False)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await submit(pilot, '!echo "token=[$DEPLOY_TOKEN]"; touch inside.txt')
        await wait_for(pilot, lambda: not app.chat.turn_running)
        block = app.chat.query_one(ToolCallBlock)
        assert "token=[]" in (block.output or "") and block.state == "error"
        assert not (workspace / "inside.txt").exists()


async def test_escape_cancels_a_long_bang_command(workspace: Path) -> None:
    runtime = synthetic(workspace)
    app = LocalAgentApp(factory_for(runtime), telemetry=False)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await submit(pilot, "!sleep 30")
        await wait_for(pilot, lambda: app.chat.turn_running)
        await pilot.press("escape")
        await wait_for(pilot, lambda: not app.chat.turn_running, timeout=10)
        block = app.chat.query_one(ToolCallBlock)
        assert block.state == "error" and block.output == "cancelled"
        assert app.chat.pending_notes == []


async def test_prompt_history_is_kept_per_repository_across_sessions(workspace: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    here, elsewhere = history_file_for(data, workspace), history_file_for(data, tmp_path)
    for prompts in (["first prompt", "!true"], ["second\nprompt"]):
        runtime = synthetic(workspace)
        app = LocalAgentApp(factory_for(runtime), telemetry=False, history_file=here)
        async with app.run_test(size=SIZE) as pilot:
            await ready(pilot)
            for text in prompts:
                await submit(pilot, text)
                await wait_for(pilot, lambda app=app: not app.chat.turn_running)

    app = LocalAgentApp(factory_for(synthetic(workspace)), telemetry=False, history_file=here)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        prompt = app.chat.prompt
        await pilot.press("up")
        assert prompt.text == "second\nprompt"
        await pilot.press("up", "up")  # to the first line, then on
        assert prompt.text == "!true"
        await pilot.press("up")
        assert prompt.text == "first prompt"
        await pilot.press("down", "down", "down")
        assert prompt.text == ""

    app = LocalAgentApp(factory_for(synthetic(workspace)), telemetry=False, history_file=elsewhere)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await pilot.press("up")
        assert app.chat.prompt.text == ""


async def test_init_asks_the_agent_to_write_agents_md_or_improve_it(workspace: Path) -> None:
    runtime = synthetic(workspace)
    app = LocalAgentApp(factory_for(runtime), telemetry=False)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await submit(pilot, "/init")
        await turn_done(pilot)
        assert "with the create tool" in sent(runtime)[-1]
        (workspace / "AGENTS.md").write_text("# Rules\n")
        await submit(pilot, "/init")
        await turn_done(pilot)
        assert "Improve it" in sent(runtime)[-1] and "with the edit tool" in sent(runtime)[-1]
        assert [m.text for m in app.chat.query(UserMessage)] == ["/init", "/init"]
        await pilot.press("up")
        assert app.chat.prompt.text == "/init"


async def test_init_with_the_real_agent_shows_the_new_agents_md_as_a_diff_to_approve(la_env) -> None:
    content = "# AGENTS.md\n\nRun `pytest -q`.\n"
    turns = [
        ScriptedTurn(tool_calls=[ScriptedToolCall("create", {"path": "AGENTS.md", "content": content})]),
        ScriptedTurn(text="Wrote AGENTS.md."),
    ]
    async with ScriptedModelServer(turns) as model:
        ctx = AppContext.load(la_env.workspace)
        options = AgentOptions(base_url=model.base_url, mode="ask")
        app = LocalAgentApp(lambda on_status: build_agent(ctx, options, on_status), telemetry=False)
        async with app.run_test(size=SIZE) as pilot:
            await ready(pilot)
            await submit(pilot, "/init")
            await wait_for(pilot, lambda: isinstance(app.screen, ApprovalScreen))
            assert "+Run `pytest -q`." in app.screen.query_one(DiffView).diff
            await pilot.press("y")
            await turn_done(pilot)
        assert (la_env.workspace / "AGENTS.md").read_text() == content
        first_prompt = next(m["content"] for m in model.requests[0]["messages"] if m["role"] == "user")
        assert "First survey the repository" in first_prompt


async def test_allow_always_saves_to_a_chosen_config_after_showing_the_diff(workspace: Path, tmp_path: Path) -> None:
    user, project = tmp_path / "config" / "config.toml", workspace / ".localagent" / "config.toml"
    runtime = synthetic(workspace, rule_files=[("user config", user), ("project config", project)])
    runtime.rule_notes[project] = "config.toml is not approved, so its allow rules are ignored"
    runtime.agent.ask_for = "echo hi"
    app = LocalAgentApp(factory_for(runtime), telemetry=False)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await submit(pilot, "say hi")
        await wait_for(pilot, lambda: isinstance(app.screen, ApprovalScreen))
        assert "Always, and save to user config (u)" in str(app.screen.query_one("#save-0").label)
        await pilot.press("u")
        await wait_for(pilot, lambda: isinstance(app.screen, SaveRuleScreen))
        assert '+    "bash(echo*)",' in app.screen.query_one(DiffView).diff
        assert not app.screen.query("#note")
        await pilot.press("n")  # back: nothing written, the question still open
        await wait_for(pilot, lambda: isinstance(app.screen, ApprovalScreen))
        assert not user.exists() and runtime.agent.answers == []

        await pilot.press("p")
        await wait_for(pilot, lambda: isinstance(app.screen, SaveRuleScreen))
        assert "is not approved" in str(app.screen.query_one("#note").content)
        await pilot.press("y")
        await turn_done(pilot)
        assert runtime.agent.answers == ["always"]
        assert '"bash(echo*)"' in project.read_text() and not user.exists()


async def test_without_rule_targets_the_modal_offers_no_saving(workspace: Path) -> None:
    runtime = synthetic(workspace)
    runtime.agent.ask_for = "echo hi"
    app = LocalAgentApp(factory_for(runtime), telemetry=False)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await submit(pilot, "say hi")
        await wait_for(pilot, lambda: isinstance(app.screen, ApprovalScreen))
        assert not app.screen.query("#save-buttons")
        await pilot.press("u")
        await pilot.press("a")
        await turn_done(pilot)
        assert runtime.agent.answers == ["always"]


async def test_a_config_that_cannot_take_the_rule_is_reported_and_the_question_stays(workspace: Path) -> None:
    broken = workspace / "broken.toml"
    broken.write_text("this is [not toml\n")
    runtime = synthetic(workspace, rule_files=[("user config", broken)])
    runtime.agent.ask_for = "echo hi"
    app = LocalAgentApp(factory_for(runtime), telemetry=False)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await submit(pilot, "say hi")
        await wait_for(pilot, lambda: isinstance(app.screen, ApprovalScreen))
        await pilot.press("u")
        await pilot.pause(0.1)
        assert isinstance(app.screen, ApprovalScreen)
        assert broken.read_text() == "this is [not toml\n" and runtime.agent.answers == []
        await pilot.press("y")
        await turn_done(pilot)
        assert runtime.agent.answers == ["once"]


async def test_a_saved_rule_with_markup_in_it_is_shown_as_text(workspace: Path, tmp_path: Path) -> None:
    # The rule is the model's command: "[/x]" or "[@click=...]" must not be read as Textual markup
    # (a MarkupError would end the app just after the rule was saved).
    user = tmp_path / "config" / "config.toml"
    runtime = synthetic(workspace, rule_files=[("user config", user)])
    runtime.agent.ask_for = "echo [/x] hi; true"
    app = LocalAgentApp(factory_for(runtime), telemetry=False)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await submit(pilot, "say hi")
        await wait_for(pilot, lambda: isinstance(app.screen, ApprovalScreen))
        await pilot.press("u")
        await wait_for(pilot, lambda: isinstance(app.screen, SaveRuleScreen))
        await pilot.press("y")
        await turn_done(pilot)
        assert runtime.agent.answers == ["always"]
        toasts = [toast for toast in app._notifications if "[/x]" in str(toast.message)]
        assert toasts and not any(toast.markup for toast in toasts)
    assert "[/x]" in user.read_text()
