"""MCP through the command line: `localagent mcp ...` and whole headless sessions in which the
scripted model calls MCP tools, including the third-party `mcp-server-time` from PyPI."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.support.scripted_model import ScriptedModelServer, ScriptedToolCall, ScriptedTurn

ECHO_SERVER = str(Path(__file__).parent / "mcp_servers" / "echo_server.py")
ECHO_ENTRY = {"command": sys.executable, "args": [ECHO_SERVER]}
# The third-party server, pinned to UTC so the test does not depend on the machine's zone.
TIME_ENTRY = {"command": sys.executable, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]}


def write_json(path: Path, data: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return path


def call(name: str, **arguments) -> ScriptedTurn:
    return ScriptedTurn(tool_calls=[ScriptedToolCall(name, arguments)])


def run_session(la_env, model: ScriptedModelServer, *extra: str) -> tuple[int, dict, str]:
    task = la_env.workspace / "TASK.md"
    task.write_text("Do the task.")
    result = la_env.run("run", str(task), "--base-url", model.base_url, "--output-format", "json", *extra)
    try:
        data = json.loads(result.stdout)
    except ValueError:
        raise AssertionError(f"no JSON on stdout: {result.stdout!r}\nstderr: {result.stderr}") from None
    assert "Traceback" not in result.stderr, result.stderr
    return result.code, data, result.stderr


def tool_names(request: dict) -> list[str]:
    return [t["function"]["name"] for t in request.get("tools", [])]


def tool_results(request: dict) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "tool"]


def test_a_third_party_server_answers_in_a_scripted_session(la_env):
    config = write_json(la_env.workspace / "servers.json", {"mcpServers": {"time": TIME_ENTRY}})
    turns = [
        call("mcp__time__get_current_time", timezone="Europe/Warsaw"),
        call("mcp__time__convert_time", source_timezone="UTC", time="12:00", target_timezone="Asia/Tokyo"),
        ScriptedTurn(text="It is a fine time."),
    ]
    with ScriptedModelServer(turns) as model:
        code, data, stderr = run_session(la_env, model, "--mcp-config", str(config), "--mode", "full-auto")
        requests = model.requests
    assert code == 0 and data["status"] == "done", stderr
    assert data["tool_calls"] == 2
    assert {"mcp__time__get_current_time", "mcp__time__convert_time"} <= set(tool_names(requests[0]))
    spec = next(t["function"] for t in requests[0]["tools"] if t["function"]["name"] == "mcp__time__get_current_time")
    assert "timezone" in spec["parameters"]["properties"] and spec["description"]
    now, converted = tool_results(requests[-1])
    assert json.loads(now)["timezone"] == "Europe/Warsaw"
    assert json.loads(converted)["target"]["datetime"].endswith("21:00:00+09:00")
    # The tool list never changes within the session: the prompt cache depends on it.
    assert all(r["tools"] == requests[0]["tools"] for r in requests)


def test_tool_errors_and_crashes_reach_the_model_as_errors(la_env):
    config = write_json(la_env.workspace / "servers.json", {"mcpServers": {"echo": ECHO_ENTRY}})
    turns = [
        call("mcp__echo__fail", message="quota exceeded"),
        call("mcp__echo__crash"),
        call("mcp__echo__echo", text="reconnected"),
        ScriptedTurn(text="done"),
    ]
    with ScriptedModelServer(turns) as model:
        code, data, stderr = run_session(la_env, model, "--mcp-config", str(config), "--mode", "full-auto")
        failed, crashed, echoed = tool_results(model.requests[-1])
    assert code == 0, stderr
    assert failed.startswith("Error") and "quota exceeded" in failed
    assert crashed.startswith("Error") and "stopped during the call" in crashed
    assert echoed == "reconnected"


def test_headless_asks_nobody_so_permission_rules_decide(la_env):
    config = write_json(la_env.workspace / "servers.json", {"mcpServers": {"echo": ECHO_ENTRY}})
    turns = [call("mcp__echo__echo", text="hi"), ScriptedTurn(text="denied")]
    with ScriptedModelServer(turns) as model:
        code, _, stderr = run_session(la_env, model, "--mcp-config", str(config), "--mode", "auto-edit")
        (denied,) = tool_results(model.requests[-1])
    assert code == 0, stderr
    assert "headless" in denied and "mcp__echo__echo" in denied

    la_env.write_config('[agent.permissions]\nallow = ["mcp__echo__*"]\n')
    with ScriptedModelServer(turns) as model:
        run_session(la_env, model, "--mcp-config", str(config), "--mode", "auto-edit")
        (allowed,) = tool_results(model.requests[-1])
    assert allowed == "hi"


def test_project_servers_need_trust_in_headless_runs(la_env):
    write_json(la_env.workspace / ".mcp.json", {"mcpServers": {"proj": ECHO_ENTRY}})
    turns = [ScriptedTurn(text="nothing to do")]
    with ScriptedModelServer(turns) as model:
        code, _, stderr = run_session(la_env, model)
        skipped_tools = tool_names(model.requests[0])
    assert code == 0
    assert not any(name.startswith("mcp__") for name in skipped_tools)
    (warning,) = [line for line in stderr.splitlines() if line.startswith("warning:")]
    assert "proj" in warning and ".mcp.json" in warning and "--trust-project-mcp" in warning

    turns = [call("mcp__proj__echo", text="trusted"), ScriptedTurn(text="ok")]
    with ScriptedModelServer(turns) as model:
        code, _, stderr = run_session(la_env, model, "--trust-project-mcp", "--mode", "full-auto")
        (result,) = tool_results(model.requests[-1])
    assert code == 0 and result == "trusted", stderr
    assert "warning:" not in stderr


def test_broken_config_and_failing_servers_do_not_stop_the_agent(la_env):
    write_json(la_env.home / "config" / "mcp.json", {"mcpServers": {"echo": ECHO_ENTRY, "broken": {"args": []}}})
    config = write_json(la_env.workspace / "extra.json", {"mcpServers": {"gone": {"command": "no-such-mcp-command"}}})
    turns = [call("mcp__echo__echo", text="still works"), ScriptedTurn(text="ok")]
    with ScriptedModelServer(turns) as model:
        code, data, stderr = run_session(la_env, model, "--mcp-config", str(config), "--mode", "full-auto")
        (result,) = tool_results(model.requests[-1])
    assert code == 0 and data["status"] == "done" and result == "still works"
    warnings = [line for line in stderr.splitlines() if line.startswith("warning:")]
    assert any("'broken'" in w and "mcp.json" in w and "needs a command" in w for w in warnings)
    assert any("gone" in w and "command not found" in w for w in warnings)


def test_mcp_list_tools_and_approve(la_env):
    write_json(la_env.home / "config" / "mcp.json", {"mcpServers": {"echo": ECHO_ENTRY, "bad": {"type": "ftp"}}})
    write_json(la_env.workspace / ".mcp.json", {"mcpServers": {"proj": ECHO_ENTRY}})

    listed = la_env.run("mcp", "list", "--json")
    assert listed.code == 0, listed.stderr
    rows = {row["name"]: row for row in json.loads(listed.stdout)}
    assert (rows["echo"]["state"], rows["echo"]["tool_count"], rows["echo"]["transport"]) == ("ready", 9, "stdio")
    assert rows["proj"]["state"] == "needs approval" and rows["proj"]["source"] == "project"
    assert "'bad'" in listed.stderr and "unknown type 'ftp'" in listed.stderr

    table = la_env.run("mcp", "list")
    assert table.code == 0 and "needs approval" in table.stdout and "ready" in table.stdout

    tools = la_env.run("mcp", "tools", "echo")
    assert tools.code == 0
    assert "mcp__echo__echo  Return the text unchanged." in tools.stdout.splitlines()

    unknown = la_env.run("mcp", "tools", "nope")
    assert unknown.code == 2 and "no MCP server named 'nope'" in unknown.stderr
    assert len(unknown.stderr.strip().splitlines()) == 2  # the config warning and the error

    approved = la_env.run("mcp", "approve", "--yes")
    assert approved.code == 0 and "proj:" in approved.stdout
    rows = {row["name"]: row for row in json.loads(la_env.run("mcp", "list", "--json").stdout)}
    assert rows["proj"]["state"] == "ready"

    # A changed server list needs approval again.
    write_json(la_env.workspace / ".mcp.json", {"mcpServers": {"proj": ECHO_ENTRY, "more": ECHO_ENTRY}})
    rows = {row["name"]: row for row in json.loads(la_env.run("mcp", "list", "--json").stdout)}
    assert rows["proj"]["state"] == rows["more"]["state"] == "needs approval"


def test_a_missing_mcp_config_is_a_usage_error(la_env):
    result = la_env.run("run", "-", "--mcp-config", "nowhere.json", input="task")
    assert result.code == 2 and "--mcp-config nowhere.json does not exist" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
