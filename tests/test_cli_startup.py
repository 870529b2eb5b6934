"""The CLI loads a command's module only when that command runs: what `localagent --version`,
`--help` and `server status` import is checked here (their start-up time is measured by
scripts/cli_startup.py, not asserted: these machines are noisy)."""

from __future__ import annotations

import argparse
import importlib
import json
import subprocess
import sys

import pytest

from localagent import cli

HEAVY = ("openai", "mcp", "textual", "agent.loop", "tui.app", "huggingface_hub", "httpx2", "jsonschema")

PROBE = """
import json, sys
from localagent.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print(json.dumps(sorted(m for m in sys.modules)), file=sys.stderr)
"""


def imported(la_env, *args: str) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args],
        capture_output=True,
        text=True,
        env=la_env.env,
        cwd=la_env.workspace,
        timeout=60,
        check=False,
    )
    return set(json.loads(done.stderr.strip().splitlines()[-1]))


@pytest.mark.parametrize("args", [["--version"], ["--help"], ["server", "status"], ["doctor"]])
def test_quick_commands_import_none_of_the_heavy_parts(la_env, args: list[str]) -> None:
    modules = imported(la_env, *args)
    assert not {name for name in HEAVY if name in modules}, args


def test_server_status_reads_records_without_settings_or_profiles(la_env) -> None:
    # pydantic-settings alone costs status a third of its start-up: the records need paths only.
    modules = imported(la_env, "server", "status")
    assert not {"pydantic_settings", "localagent.config", "server.profiles"} & modules


def test_each_commands_help_line_is_its_modules_own() -> None:
    for name, (module, help_text) in cli.COMMANDS.items():
        parent = argparse.ArgumentParser()
        commands = parent.add_subparsers()
        importlib.import_module(module).register(commands)
        registered = {action.dest: action.help for action in commands._choices_actions}
        assert registered.get(name) == help_text, name


def test_every_command_still_parses_and_unknown_ones_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    parser = cli.build_parser()
    assert parser.parse_args(["sessions", "--all"]).all is True
    assert parser.parse_args(["server", "status"]).handler.__name__ == "cmd_status"
    assert parser.parse_args(["run", "hello"]).task == "hello"
    with pytest.raises(SystemExit):
        parser.parse_args(["servr"])
    assert "invalid choice: 'servr'" in capsys.readouterr().err


def test_version_goes_to_stdout(la_env) -> None:
    result = la_env.run("--version")
    assert result.code == 0 and result.stdout.startswith("localagent ") and result.stderr == ""
