"""Rule names: ours, Claude Code's aliases for ours, MCP servers and tools, globs; unknown names are errors.

Written as attacks where it matters: a rule that names a tool in Claude Code's words must stop
every tool of ours that does that job, never parse and then protect nothing.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.permissions import (
    BUILTIN_TOOL_NAMES,
    CLAUDE_ALIASES,
    MCP_NAME_MAX_LENGTH,
    PermissionConfigError,
    PermissionPolicy,
    PermissionRules,
    Rule,
)
from tests.support.scripted_model import ScriptedModelServer, ScriptedToolCall, ScriptedTurn
from tools.mcp.names import MAX_NAME_LENGTH, tool_name
from tools.registry import builtin_tools

SECRET = "sk-this-must-never-reach-the-model"
READS = {"view": True, "grep": True, "glob": True}


def policy(mode: str = "full-auto", **rules: list[str]) -> PermissionPolicy:
    return PermissionPolicy(mode, PermissionRules.from_config(rules))


def decide(p: PermissionPolicy, tool: str, summary: str, workspace: Path | None = None, **arguments: str) -> str:
    args = arguments or ({"path": summary} if tool not in ("bash",) else {"command": summary})
    return p.decide(tool, READS.get(tool, False), summary, workspace=workspace, arguments=args).action


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / ".env").write_text(f"API_KEY={SECRET}\n")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / ".env").write_text("X=1\n")
    (tmp_path / "src" / "app.py").write_text("print(1)\n")
    return tmp_path


def test_our_names_are_the_registry_s() -> None:
    assert set(BUILTIN_TOOL_NAMES) == {tool.name for tool in builtin_tools()}
    for targets in CLAUDE_ALIASES.values():
        assert set(targets) <= set(BUILTIN_TOOL_NAMES)


# -- Claude Code's names ---------------------------------------------------------------------


@pytest.mark.parametrize("name", ["Read", "read", "READ"])
def test_read_deny_stops_view_and_the_searches_that_would_read_it(workspace: Path, name: str) -> None:
    p = policy(deny=[f"{name}(.env)"])
    decision = p.decide("view", True, ".env", workspace=workspace, arguments={"path": ".env"})
    assert decision.action == "deny" and decision.rule == f"{name}(.env)"
    # A bare name matches at any depth, as in .gitignore, however the path is spelled.
    for path in ("./.env", "src/.env", "src/../.env"):
        assert decide(p, "view", path, workspace) == "deny", path
    assert decide(p, "grep", ".env", workspace, pattern="KEY", path=".env") == "deny"
    # A search of the whole workspace would read .env: it asks (denied headless) instead.
    assert decide(p, "grep", "grep KEY in .", workspace, pattern="KEY") == "ask"
    assert decide(p, "view", "src/app.py", workspace) == "allow"


def test_bare_read_deny_covers_every_reading_tool() -> None:
    p = policy(deny=["Read"])
    assert [decide(p, tool, "x") for tool in ("view", "grep", "glob")] == ["deny"] * 3
    assert decide(p, "edit", "x") == "allow"


@pytest.mark.parametrize("name", ["Write", "Edit", "MultiEdit", "write", "multiedit"])
def test_claude_write_names_stop_every_tool_that_changes_the_file(workspace: Path, name: str) -> None:
    p = policy(deny=[f"{name}(.env)"])
    for tool in ("create", "edit", "insert"):
        assert decide(p, tool, ".env", workspace) == "deny", tool
        assert decide(p, tool, "src/app.py", workspace) == "allow", tool
    assert decide(p, "view", ".env", workspace) == "allow"


def test_claude_edit_allow_covers_our_three_writing_tools(workspace: Path) -> None:
    p = policy("ask", allow=["Edit(src/**)"])
    for tool in ("create", "edit", "insert"):
        assert decide(p, tool, "src/app.py", workspace) == "allow", tool
        assert decide(p, tool, "app.py", workspace) == "ask", tool


def test_our_own_spelling_keeps_its_meaning() -> None:
    # `edit` is our edit tool alone, in any case but Claude Code's exact `Edit`.
    for spelling in ("edit", "EDIT"):
        p = policy(deny=[f"{spelling}(.env)"])
        assert [decide(p, tool, ".env") for tool in ("edit", "insert", "create")] == ["deny", "allow", "allow"]
    assert decide(policy(deny=["BASH(rm*)"]), "bash", "rm -rf x") == "deny"
    assert Rule.parse("Bash(ls*)").tools == ("bash",) and Rule.parse("Grep").tools == ("grep",)


def test_every_alias_protects_what_it_names() -> None:
    # The attack: a rule that parses and matches no call at all.
    for name, targets in CLAUDE_ALIASES.items():
        for spelling in {name, name.lower(), name.upper()}:
            rule = Rule.parse(f"{spelling}(x)")
            covered = {tool for tool in BUILTIN_TOOL_NAMES if rule.covers_tool(tool)}
            assert covered, spelling
            if spelling == name or spelling.lower() not in BUILTIN_TOOL_NAMES:
                assert covered == set(targets), spelling


def test_claude_paths_outside_the_workspace_are_refused_for_claude_names() -> None:
    for text in ("Read(~/.ssh/**)", "Edit(//etc/passwd)", "read(~/x)"):
        with pytest.raises(PermissionConfigError, match="never leave the workspace") as info:
            Rule.parse(text)
        assert "\n" not in str(info.value) and repr(text) in str(info.value)
    # Our own names keep their meaning: a workspace path that starts with `~`.
    assert Rule.parse("view(~/x)").pattern == "~/x"
    assert Rule.parse("Bash(cat ~/.ssh/id_rsa)").pattern == "cat ~/.ssh/id_rsa"


# -- Bash's `:*` -----------------------------------------------------------------------------


def test_word_prefix_matches_the_command_and_its_arguments_only() -> None:
    p = policy("ask", allow=["Bash(git log:*)"])
    assert decide(p, "bash", "git log") == "allow"
    assert decide(p, "bash", "git log --oneline -5") == "allow"
    assert decide(p, "bash", "git logx") == "ask"
    assert decide(p, "bash", "git log; rm -rf x") == "ask"


def test_word_prefix_deny_stops_it_inside_a_line() -> None:
    p = policy(deny=["Bash(git push:*)"], allow=["bash"])
    for command in ("git push", "git push --force origin main", "cd x && git push", "env A=1 git push -f"):
        assert decide(p, "bash", command) == "deny", command
    assert decide(p, "bash", "git pushx") == "allow"


# -- MCP names -------------------------------------------------------------------------------


def test_an_mcp_server_name_covers_its_tools_only() -> None:
    p = policy("ask", allow=["mcp__git"])
    assert decide(p, "mcp__git__status", "{}") == "allow"
    assert decide(p, "mcp__git__commit", "{}") == "allow"
    assert decide(p, "mcp__github__create_issue", "{}") == "ask"
    assert Rule.parse("mcp__git").tools == ("mcp__git__*",)
    star = policy("ask", allow=["mcp__git__*"])
    assert decide(star, "mcp__git__status", "{}") == "allow" and decide(star, "mcp__github__x", "{}") == "ask"
    denied = policy(deny=["mcp__fs"])
    assert decide(denied, "mcp__fs__read_file", "{}") == "deny" and decide(denied, "view", "x") == "allow"


def test_an_mcp_tool_name_is_exact() -> None:
    p = policy("ask", allow=["mcp__git__status"])
    assert decide(p, "mcp__git__status", "{}") == "allow"
    assert decide(p, "mcp__git__status_all", "{}") == "ask"


def test_the_mcp_name_limit_is_the_one_names_are_cut_to() -> None:
    assert MCP_NAME_MAX_LENGTH == MAX_NAME_LENGTH


def _shortened_name() -> str:
    name = tool_name("a-very-long-server-name-for-the-company-wide-knowledge-base", "search")
    # What tools/mcp/names.py makes of it: cut inside the server's name, no `__` after the prefix.
    assert len(name) == MAX_NAME_LENGTH and "__" not in name.removeprefix("mcp__")
    return name


def test_a_shortened_mcp_tool_name_is_covered_by_a_rule_naming_it() -> None:
    # The attack: the person denies the tool by the name it is listed under, and it still runs.
    name = _shortened_name()
    denied = policy(deny=[name])
    assert decide(denied, name, "{}") == "deny"
    assert decide(denied, "view", "x") == "allow"
    assert decide(policy("ask", allow=[name]), name, "{}") == "allow"
    # "Allow always" adds a rule for the tool that was called: it must match that tool.
    p = policy("ask")
    p.add_rule("allow", name)
    assert decide(p, name, "{}") == "allow"
    # As a server name it still covers tools of that name's server, if any.
    assert decide(denied, f"{name}__x", "{}") == "deny"


# -- unknown names ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rule", "problem"),
    [
        ("Reed(.env)", "no tool is called 'Reed'"),
        ("vew", "no tool is called 'vew'"),
        ("WebFetch(domain:example.com)", "WebFetch is a Claude Code tool that localagent does not have"),
        ("NotebookEdit", "a Claude Code tool"),
        ("Rea*(.env)", "matches none of localagent's tools"),
        ("git*", "matches none of localagent's tools"),
        # A glob that starts with a wildcard may still match nothing at all, not even an MCP name.
        ("[Rr]ead(.env)", "matches none of localagent's tools"),
        ("?ead(.env)", "matches none of localagent's tools"),
        ("[!bcegimv]*", "matches none of localagent's tools"),
        ("?", "matches none of localagent's tools"),
        ("*[]", "matches none of localagent's tools"),
        ("mcp__", "names a server"),
    ],
)
def test_a_rule_that_names_no_tool_is_a_config_error(rule: str, problem: str) -> None:
    with pytest.raises(PermissionConfigError) as info:
        PermissionRules.from_config({"deny": [rule]})
    message = str(info.value)
    assert problem in message and repr(rule) in message and "\n" not in message
    assert message.startswith("agent.permissions.deny: ")
    # It lists what a rule may name.
    for known in ("view", "create", "insert", "glob", "Read", "MultiEdit", "mcp__<server>__<tool>"):
        assert known in message
    assert info.value.exit_code == 2


@pytest.mark.parametrize(
    "rule",
    [
        "*",
        "*(secret/**)",
        "ed*",
        "[ce]*",
        "BASH",
        "Glob(*.py)",
        "mcp__anything__at_all",
        "MCP__x",
        "*__read_file",
        "?iew",
        "[vV]iew",
        "[!x]*",
        "m*",
        "mcp_*",
        "?cp__*",
        "[m]cp__git__*",
        "*git*",
        "????",
        "*[_]*",
    ],
)
def test_known_names_and_globs_that_could_match_are_accepted(rule: str) -> None:
    assert PermissionRules.from_config({"allow": [rule]}).allow[0].text == rule


def test_tools_added_besides_the_built_in_ones_are_known_when_named() -> None:
    with pytest.raises(PermissionConfigError):
        PermissionRules.from_config({"allow": ["calculator"]})
    rules = PermissionRules.from_config({"allow": ["calculator"]}, tool_names=["calculator"])
    assert PermissionPolicy("ask", rules).decide("calculator", False, "1+1").action == "allow"


def test_rules_added_at_run_time_are_not_checked_against_the_config_names() -> None:
    # "Allow always" adds a rule for the tool that was called, whatever its name.
    p = policy("ask")
    p.add_rule("allow", "calculator")
    assert p.decide("calculator", False, "1+1").action == "allow"


# -- end to end: the configuration and a headless run ----------------------------------------


def _view_env_run(la_env, *extra: str) -> tuple[int, list[dict], str]:
    (la_env.workspace / ".env").write_text(f"API_KEY={SECRET}\n")
    task = la_env.workspace / "TASK.md"
    task.write_text("Show me .env")
    turns = [ScriptedTurn(tool_calls=[ScriptedToolCall("view", {"path": ".env"})]), ScriptedTurn(text="refused")]
    with ScriptedModelServer(turns) as model:
        result = la_env.run("run", str(task), "--base-url", model.base_url, "--output-format", "json", *extra)
        requests = model.requests
    return result.code, requests, result.stderr


def test_deny_read_env_stops_a_headless_view_of_env(la_env) -> None:
    # Without the rule the model does read it: the test below is not vacuous.
    _, requests, _ = _view_env_run(la_env, "--mode", "full-auto")
    assert SECRET in str(requests[-1])
    la_env.write_config('[agent.permissions]\ndeny = ["Read(.env)"]\n')
    code, requests, stderr = _view_env_run(la_env, "--mode", "full-auto")
    assert code == 0, stderr
    results = [m["content"] for m in requests[-1]["messages"] if m["role"] == "tool"]
    assert len(results) == 1 and "Read(.env)" in results[0] and "denied" in results[0]
    assert all(SECRET not in str(request) for request in requests)


def test_an_unapproved_workspace_file_may_deny_with_claude_names(la_env) -> None:
    (la_env.workspace / ".localagent.toml").write_text('[agent.permissions]\ndeny = ["Read(.env)"]\n')
    code, requests, stderr = _view_env_run(la_env, "--mode", "full-auto")
    assert code == 0, stderr
    assert all(SECRET not in str(request) for request in requests)


@pytest.mark.parametrize("where", ["user", "workspace"])
def test_an_unknown_name_in_the_config_is_exit_2_with_one_line(la_env, where: str) -> None:
    text = '[agent.permissions]\ndeny = ["Reed(.env)"]\n'
    if where == "user":
        la_env.write_config(text)
    else:
        # In a workspace file the person approved: their rule, so an error naming it, never ignored.
        (la_env.workspace / ".localagent.toml").write_text(text)
        approved = la_env.run("config", "approve", "--yes")
        assert approved.code == 0, approved.stderr
    result = la_env.run("run", "-", "--base-url", "http://127.0.0.1:9/v1", input="task")
    assert result.code == 2, result.stderr
    lines = [line for line in result.stderr.splitlines() if "Reed" in line]
    assert len(lines) == 1 and "'Reed(.env)'" in lines[0] and "no tool is called" in lines[0]


def test_the_caller_may_name_where_the_rules_came_from() -> None:
    with pytest.raises(PermissionConfigError) as info:
        PermissionRules.from_config({"deny": ["Reed"]}, origin="")
    assert str(info.value).startswith("permission rule 'Reed' covers no tool: ")
    with pytest.raises(PermissionConfigError, match=r"^--disallowedTools\.deny: "):
        PermissionRules.from_config({"deny": ["Reed"]}, origin="--disallowedTools")


def test_a_bad_rule_in_an_unapproved_workspace_file_is_dropped_with_a_notice(la_env) -> None:
    # The attack: any repository could keep the agent from starting with one rule naming nothing.
    bad = ["WebFetch", "Reed(.env)", "Read(~/.ssh/**)", "bash(ls"]
    rules = ", ".join(f'"{rule}"' for rule in [*bad, "Read(.env)"])
    (la_env.workspace / ".localagent.toml").write_text(f'[agent.permissions]\ndeny = [{rules}]\nask = ["vew"]\n')
    code, requests, stderr = _view_env_run(la_env, "--mode", "full-auto")
    assert code == 0, stderr
    for rule in (*bad, "vew"):
        lines = [line for line in stderr.splitlines() if repr(rule) in line]
        assert len(lines) == 1 and ".localagent.toml" in lines[0], (rule, stderr)
    # Its good rule still applies.
    assert all(SECRET not in str(request) for request in requests)
