"""MCP configuration files, tool names, result rendering and project approvals (no servers run)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mcp_types import (
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)

from agent.permissions import PermissionPolicy, PermissionRules
from tools.mcp import ApprovalStore, approve_project_servers, fingerprint, load_config_file, merge
from tools.mcp.config import DEFAULT_CALL_TIMEOUT, DEFAULT_STARTUP_TIMEOUT, expand
from tools.mcp.names import MAX_NAME_LENGTH, tool_name, unique_tool_names
from tools.mcp.results import render, to_tool_result

# What a Claude Code user already has, with keys other clients add.
CLAUDE_CODE_FILE = {
    "mcpServers": {
        "git": {"type": "stdio", "command": "uvx", "args": ["mcp-server-git", "--repository", "."], "env": {}},
        "docs": {
            "type": "http",
            "url": "https://example.test/mcp",
            "headers": {"Authorization": "Bearer ${DOCS_TOKEN}"},
        },
        "events": {"type": "sse", "url": "https://example.test/sse", "alwaysAllow": ["x"], "disabled": False},
        "plain": {"command": "node", "args": ["server.js", 8080], "autoApprove": [], "timeout": 30},
    },
    "someOtherClientKey": {"ignored": True},
}


def write(path: Path, data: object) -> Path:
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def test_a_claude_code_file_loads_unchanged(tmp_path):
    path = write(tmp_path / ".mcp.json", CLAUDE_CODE_FILE)
    loaded = load_config_file(path, "project", environ={"DOCS_TOKEN": "s3cret"})
    assert loaded.problems == []
    servers = {s.name: s for s in loaded.servers}
    assert servers["git"].transport == "stdio" and servers["git"].args == ["mcp-server-git", "--repository", "."]
    assert servers["docs"].transport == "http" and servers["docs"].headers == {"Authorization": "Bearer s3cret"}
    assert servers["events"].transport == "sse" and servers["events"].url == "https://example.test/sse"
    assert servers["plain"].args == ["server.js", "8080"]
    assert all(s.source == "project" and s.origin == path for s in servers.values())
    assert servers["plain"].startup_timeout == DEFAULT_STARTUP_TIMEOUT
    assert servers["plain"].call_timeout == DEFAULT_CALL_TIMEOUT


def test_variables_are_expanded_in_command_args_env_url_and_headers(tmp_path):
    entry = {
        "command": "${TOOL_BIN}/run",
        "args": ["--root", "${ROOT:-/srv}", "${EMPTY:-fallback}"],
        "env": {"TOKEN": "${TOKEN}", "LEVEL": "${LEVEL:-info}"},
    }
    remote = {"type": "http", "url": "http://${HOST:-localhost}:${PORT}/mcp", "headers": {"X-Key": "k-${TOKEN}"}}
    path = write(tmp_path / "m.json", {"mcpServers": {"local": entry, "remote": remote}})
    environ = {"TOOL_BIN": "/opt/bin", "TOKEN": "abc", "PORT": "9000", "EMPTY": ""}
    servers = {s.name: s for s in load_config_file(path, "cli", environ=environ).servers}
    assert servers["local"].command == "/opt/bin/run"
    assert servers["local"].args == ["--root", "/srv", "fallback"]
    assert servers["local"].env == {"TOKEN": "abc", "LEVEL": "info"}
    assert servers["remote"].url == "http://localhost:9000/mcp"
    assert servers["remote"].headers == {"X-Key": "k-abc"}


def test_an_unset_variable_without_default_names_file_server_and_variable(tmp_path):
    servers = {"a": {"command": "x", "env": {"K": "${NOPE_VAR}"}}, "b": {"command": "y"}}
    path = write(tmp_path / "m.json", {"mcpServers": servers})
    loaded = load_config_file(path, "user", environ={})
    assert [s.name for s in loaded.servers] == ["b"]
    (problem,) = loaded.problems
    text = str(problem)
    assert str(path) in text and "'a'" in text and "NOPE_VAR" in text and "\n" not in text
    with pytest.raises(Exception, match="NOPE_VAR"):
        expand("${NOPE_VAR}", {})


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        ({"args": ["x"]}, "needs a command"),
        ({"command": "x", "args": "not-a-list"}, "args"),
        ({"command": "x", "env": {"A": ["list"]}}, "env.A"),
        ({"type": "websocket", "url": "ws://x"}, "unknown type 'websocket'"),
        ({"type": "http"}, "needs a url"),
        ({"type": "sse", "url": "example.test/sse"}, "must start with http"),
        ({"command": "x", "startup_timeout": -1}, "startup_timeout"),
        ("just a string", "must be an object"),
    ],
)
def test_a_broken_entry_is_one_line_and_the_others_still_load(tmp_path, entry, expected):
    path = write(tmp_path / "m.json", {"mcpServers": {"bad": entry, "good": {"command": "ok"}}})
    loaded = load_config_file(path, "user", environ={})
    assert [s.name for s in loaded.servers] == ["good"]
    (problem,) = loaded.problems
    assert problem.server == "bad" and expected in problem.message
    assert "\n" not in str(problem) and str(path) in str(problem)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"mcpServers": {"a": {"command": "x",}}}', "not valid JSON"),
        ("[1, 2]", "top level must be a JSON object"),
        ('{"mcpServers": []}', "mcpServers must be an object"),
    ],
)
def test_a_broken_file_is_one_problem_naming_the_file(tmp_path, text, expected):
    path = write(tmp_path / ".mcp.json", text)
    loaded = load_config_file(path, "project")
    assert loaded.servers == []
    (problem,) = loaded.problems
    assert expected in str(problem) and str(path) in str(problem) and problem.server is None


def test_missing_files_are_empty_unless_required(tmp_path):
    assert load_config_file(tmp_path / "none.json", "user").problems == []
    (problem,) = load_config_file(tmp_path / "none.json", "cli", required=True).problems
    assert "not found" in str(problem)
    # A settings file without mcpServers simply has none.
    assert load_config_file(write(tmp_path / "s.json", {"theme": "dark"}), "user").servers == []


def test_relative_cwd_and_timeouts_per_server(tmp_path):
    entry = {"command": "x", "cwd": "sub/dir", "startupTimeout": 2.5, "call_timeout": 7}
    (server,) = load_config_file(write(tmp_path / "m.json", {"mcpServers": {"a": entry}}), "user").servers
    assert server.cwd == (tmp_path / "sub" / "dir").resolve()
    assert (server.startup_timeout, server.call_timeout) == (2.5, 7.0)


def test_later_files_win_for_a_shared_name(tmp_path):
    user_file = write(tmp_path / "u.json", {"mcpServers": {"a": {"command": "user"}, "b": {"command": "b"}}})
    user = load_config_file(user_file, "user")
    project = load_config_file(write(tmp_path / "p.json", {"mcpServers": {"a": {"command": "project"}}}), "project")
    merged = {s.name: s for s in merge([user, project])}
    assert merged["a"].command == "project" and merged["a"].source == "project"
    assert merged["b"].source == "user"


def test_tool_names_are_sanitised_and_capped():
    assert tool_name("git", "git_status") == "mcp__git__git_status"
    assert tool_name("my server", "read.file/v2") == "mcp__my_server__read_file_v2"
    long = tool_name("a-very-long-server-name-for-testing", "and_an_even_longer_tool_name_that_goes_on")
    assert len(long) == MAX_NAME_LENGTH and long.startswith("mcp__a-very-long")
    names = unique_tool_names([("s", "a.b"), ("s", "a_b"), ("s", "c")])
    assert names[0] == "mcp__s__a_b" and names[1] != names[0] and names[2] == "mcp__s__c"
    assert all(len(n) <= MAX_NAME_LENGTH for n in names)


def test_permission_rules_match_mcp_tools_by_name():
    rules = PermissionRules.from_config({"allow": ["mcp__git__*"]})
    assert PermissionPolicy("ask", rules).decide("mcp__git__git_log", False, "{}").action == "allow"
    assert PermissionPolicy("ask", rules).decide("mcp__time__now", False, "{}").action == "ask"
    assert PermissionPolicy("auto-edit").decide("mcp__time__now", False, "{}").action == "ask"
    assert PermissionPolicy("full-auto").decide("mcp__time__now", False, "{}").action == "allow"
    assert PermissionPolicy("read-only").decide("mcp__time__now", False, "{}").action == "deny"


# -- results -----------------------------------------------------------------------------------


def test_text_is_joined_and_media_summarised_in_a_line_each():
    result = CallToolResult(
        content=[
            TextContent(text="first"),
            TextContent(text="second"),
            ImageContent(data="A" * 4000, mime_type="image/png"),
            EmbeddedResource(resource=TextResourceContents(uri="file:///a.txt", text="hello", mime_type="text/plain")),
            ResourceLink(name="report", uri="file:///r.pdf", description="The report\nmore"),
        ]
    )
    lines = render(result).splitlines()
    assert lines[:2] == ["first", "second"]
    assert lines[2] == "[image: image/png, 2.9 KiB]"
    assert lines[3] == "[resource: file:///a.txt, text/plain, 5 characters]"
    assert lines[4] == "[resource link: report <file:///r.pdf> - The report]"


def test_structured_only_and_empty_results():
    assert json.loads(render(CallToolResult(content=[], structured_content={"n": 1}))) == {"n": 1}
    assert "no output" in render(CallToolResult(content=[]))
    assert "error" in render(CallToolResult(content=[], is_error=True))


def test_is_error_passes_through_and_long_output_is_saved(tmp_path):
    failed = CallToolResult(content=[TextContent(text="nope")], is_error=True)
    error = to_tool_result(failed, server="s", tool="t", scratch_dir=tmp_path)
    assert error.is_error and error.output == "nope"
    text = "".join(f"line {i}\n" for i in range(5000))
    long = CallToolResult(content=[TextContent(text=text)])
    capped = to_tool_result(long, server="s", tool="t", scratch_dir=tmp_path)
    saved = Path(capped.metadata["full_output"])
    assert saved.read_text() == text and saved.parent == tmp_path
    assert len(capped.output) < 40_000 and str(saved) in capped.output
    assert capped.output.startswith("line 0\n") and capped.output.endswith("line 4999\n")


# -- approvals ---------------------------------------------------------------------------------


def project_setup(tmp_path: Path, servers: dict) -> tuple[list, dict, Path]:
    path = write(tmp_path / ".mcp.json", {"mcpServers": servers})
    loaded = load_config_file(path, "project")
    return loaded.servers, loaded.raw_servers, path


async def test_project_servers_need_approval_once_per_repo_and_list(tmp_path):
    servers, raw, path = project_setup(tmp_path, {"git": {"command": "uvx", "args": ["mcp-server-git"]}})
    user_file = write(tmp_path / "u.json", {"mcpServers": {"mine": {"command": "x"}}})
    user_server = load_config_file(user_file, "user").servers
    store = ApprovalStore(tmp_path / "data" / "mcp-approvals.json")
    everything = [*servers, *user_server]

    where = {"repo": tmp_path, "config_file": path, "store": store}
    allowed, notes = await approve_project_servers(everything, raw_servers=raw, **where)
    assert [s.name for s in allowed] == ["mine"]
    (note,) = notes
    assert "git" in note and str(path) in note and "--trust-project-mcp" in note and "\n" not in note

    asked = []

    async def ask(request):
        asked.append(request)
        return True

    allowed, notes = await approve_project_servers(everything, raw_servers=raw, ask=ask, **where)
    assert {s.name for s in allowed} == {"git", "mine"} and notes == []
    assert asked[0].lines() == ["git:", "  runs: uvx mcp-server-git"] and asked[0].fingerprint == fingerprint(raw)

    # Remembered: no second question, even for a caller that cannot ask.
    allowed, _ = await approve_project_servers(everything, raw_servers=raw, **where)
    assert {s.name for s in allowed} == {"git", "mine"} and len(asked) == 1

    # A changed server list asks again.
    changed, raw2, _ = project_setup(tmp_path, {"git": {"command": "curl", "args": ["evil.sh"]}})
    allowed, notes = await approve_project_servers(changed, raw_servers=raw2, **where)
    assert allowed == [] and len(notes) == 1


async def test_declined_is_remembered_and_trust_overrides(tmp_path):
    servers, raw, path = project_setup(tmp_path, {"git": {"command": "uvx"}})
    store = ApprovalStore(tmp_path / "approvals.json")

    async def no(_request):
        return False

    where = {"repo": tmp_path, "config_file": path, "store": store}
    allowed, notes = await approve_project_servers(servers, raw_servers=raw, ask=no, **where)
    assert allowed == [] and "declined" in notes[0]
    assert store.decision(tmp_path, fingerprint(raw)) is False
    allowed, notes = await approve_project_servers(servers, raw_servers=raw, trust=True, **where)
    assert [s.name for s in allowed] == ["git"] and notes == []


def test_a_corrupt_approval_store_only_means_asking_again(tmp_path):
    path = write(tmp_path / "approvals.json", "{broken")
    store = ApprovalStore(path)
    assert store.decision(tmp_path, "x") is None
    store.remember(tmp_path, "x", True)
    assert store.decision(tmp_path, "x") is True


def test_the_example_file_loads_without_problems():
    example = Path(__file__).parent.parent / "examples" / "mcp" / ".mcp.json"
    loaded = load_config_file(example, "project", environ={})
    assert loaded.problems == []
    assert {s.name for s in loaded.servers} == {"time", "git", "fetch"}
    assert next(s for s in loaded.servers if s.name == "time").args[-1] == "UTC"
