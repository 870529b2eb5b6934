"""Help that matches what the commands accept: every option explained, `acp` listing only what
it takes, the prompt hint only where there is a prompt, names never cut, `sessions --all`."""

from __future__ import annotations

from localagent import cli
from localagent.reference_docs import every_parser


def test_every_option_of_every_command_says_what_it_does() -> None:
    unexplained = [
        f"{path} {'/'.join(action.option_strings)}"
        for path, parser in every_parser()
        for action in parser._actions
        if action.option_strings and not action.help
    ]
    assert unexplained == []


def test_the_prompt_hint_is_only_where_a_prompt_is_given() -> None:
    helps = {path: parser.format_help() for path, parser in every_parser()}
    assert "give the prompt first" in helps["localagent run"]
    assert "give the prompt first" not in helps["localagent"]
    assert "give the prompt first" not in helps["localagent acp"]


def test_acp_lists_only_what_it_accepts(la_env) -> None:
    helps = {path: parser.format_help() for path, parser in every_parser()}
    assert "--resume" not in helps["localagent acp"] and "--continue" not in helps["localagent acp"]
    refused = la_env.run("acp", "-c")
    assert refused.code == 2 and "session/load" in refused.stderr and len(refused.stderr.strip().splitlines()) == 1


def test_no_command_takes_an_abbreviated_option() -> None:
    assert [path for path, parser in every_parser() if parser.allow_abbrev] == []


def test_sessions_all_is_not_taken_for_another_option(la_env) -> None:
    result = la_env.run("sessions", "--all")
    assert result.code == 0, result.stderr
    assert "no saved sessions" in result.stdout and "ambiguous" not in result.stderr


def test_profile_names_are_never_cut_on_a_narrow_terminal(la_env) -> None:
    env = dict(la_env.env, COLUMNS="60")
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "localagent.cli", "server", "profiles"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    for name in ("gemma4-31b-dflash", "gemma4-31b-sglang", "tiny-dflash-baseline"):
        assert name in done.stdout, name


def test_a_bare_prompt_opens_the_tui_with_it_and_a_typo_of_a_command_is_not_taken_for_one() -> None:
    assert cli.with_first_prompt(["fix the failing test"]) == ["--first-prompt", "fix the failing test"]
    assert cli.with_first_prompt(["hello", "--profile", "tiny"]) == ["--first-prompt", "hello", "--profile", "tiny"]
    assert cli.with_first_prompt(["sever", "status"]) == ["sever", "status"]  # a typo of `server`
    assert cli.with_first_prompt(["run", "x"]) == ["run", "x"] and cli.with_first_prompt(["--version"]) == ["--version"]
    assert "opens the TUI" in cli.build_parser().format_help()


async def test_the_tui_sends_its_first_prompt_once_the_model_is_ready() -> None:
    from tests.support.synthetic_runtime import SyntheticAgent, SyntheticRuntime, factory_for
    from tui.app import LocalAgentApp
    from tui.widgets.user_message import UserMessage

    runtime = SyntheticRuntime(SyntheticAgent(tokens=20, tokens_per_second=2000))
    app = LocalAgentApp(factory_for(runtime), telemetry=False, first_prompt="fix the failing test")
    async with app.run_test() as pilot:
        for _ in range(200):
            await pilot.pause(0.05)
            if any(m["role"] == "assistant" for m in runtime.agent.messages):
                break
        users = [m["content"] for m in runtime.agent.messages if m["role"] == "user"]
        assert users == ["fix the failing test"]
        assert len(app.chat.query(UserMessage)) == 1
