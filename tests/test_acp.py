"""``localagent acp`` driven as an editor drives it: the SDK's client side on a subprocess, the
model scripted (a real HTTP server playing the model's choices), the tools, permissions, session
files and the server real."""

from __future__ import annotations

import asyncio
import json

import pytest
from acp import RequestError, text_block

from tests.support.acp_client import RecordingClient, acp_agent
from tests.support.scripted_model import ScriptedModelServer, ScriptedToolCall, ScriptedTurn


def edit_call(path: str, old: str, new: str) -> ScriptedTurn:
    return ScriptedTurn(tool_calls=[ScriptedToolCall("edit", {"path": path, "old_string": old, "new_string": new})])


async def test_a_session_streams_asks_edits_with_a_diff_cancels_and_loads_again(la_env) -> None:
    work = la_env.workspace
    (work / "app.py").write_text("def add(a, b):\n    return a - b\n")
    turns = [
        ScriptedTurn(
            reasoning="The sign is wrong.",
            text="Let me look. ",
            tool_calls=[ScriptedToolCall("view", {"path": "app.py"})],
        ),
        edit_call("app.py", "return a - b", "return a + b"),
        ScriptedTurn(text="Fixed: add() now adds."),
        # The second prompt: an edit the person rejects.
        edit_call("app.py", "return a + b", "return 0"),
        ScriptedTurn(text="Left it as it was."),
        # The third: a long answer, cancelled while it streams.
        ScriptedTurn(text="word " * 400, chunk_size=4, chunk_delay=0.02),
    ]
    client = RecordingClient(answers=["once", "deny"])
    with ScriptedModelServer(turns, speculative=True) as model:
        async with acp_agent(la_env.env, work, "--base-url", model.base_url, client=client) as (conn, client, _):
            new = await conn.new_session(cwd=str(work), mcp_servers=[])
            assert new.modes.current_mode_id == "ask"
            assert [m.id for m in new.modes.available_modes] == ["read-only", "ask", "auto-edit", "full-auto"]
            sid = new.session_id

            done = await asyncio.wait_for(conn.prompt(session_id=sid, prompt=[text_block("fix add()")]), 120)
            assert done.stop_reason == "end_turn"
            assert client.text() == "Let me look. Fixed: add() now adds."
            assert "The sign is wrong." in client.text("agent_thought_chunk")
            starts = client.of_kind("tool_call")
            assert [(s.kind, s.status) for s in starts] == [("read", "in_progress"), ("edit", "in_progress")]
            assert starts[1].locations[0].path == str(work / "app.py")
            # The edit needed the person: asked once, with the change in the request.
            [(asked, options)] = client.permissions
            assert options == ["once", "always", "deny"] and asked.tool_call_id == starts[1].tool_call_id
            assert "+    return a + b" in asked.content[0].content.text
            finished = [u for u in client.of_kind("tool_call_update") if u.status == "completed"]
            diff = next(c for c in finished[-1].content if c.type == "diff")
            assert (diff.path, diff.old_text, diff.new_text) == (
                str(work / "app.py"),
                "def add(a, b):\n    return a - b\n",
                "def add(a, b):\n    return a + b\n",
            )
            assert (work / "app.py").read_text().endswith("a + b\n")
            # The server's numbers: live on the updates, totals in the answer.
            assert any("localagent" in meta for _sid, _u, meta in client.updates)
            summary = done.field_meta["localagent"]
            assert summary["generated"] > 0 and summary["drafted"] > 0 and "tok/s" in summary["summary"]
            assert done.usage.output_tokens == summary["generated"]

            client.updates.clear()
            rejected = await asyncio.wait_for(conn.prompt(session_id=sid, prompt=[text_block("make it return 0")]), 120)
            assert rejected.stop_reason == "end_turn"
            failed = [u for u in client.of_kind("tool_call_update") if u.status == "failed"]
            assert failed and "denied" in failed[0].content[0].content.text
            assert (work / "app.py").read_text().endswith("a + b\n")

            client.updates.clear()
            streaming = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[text_block("write a lot")]))
            while not client.of_kind("agent_message_chunk"):
                await asyncio.sleep(0.02)
            await conn.cancel(session_id=sid)
            cancelled = await asyncio.wait_for(streaming, 60)
            assert cancelled.stop_reason == "cancelled"
            assert len(client.text()) < len("word " * 400)

        # A new process, as when the editor restarts: the saved session comes back.
        async with acp_agent(la_env.env, work, "--base-url", model.base_url) as (conn, client, _):
            await asyncio.wait_for(conn.load_session(cwd=str(work), session_id=sid, mcp_servers=[]), 60)
            users = [u.content.text for u in client.of_kind("user_message_chunk")]
            assert users == ["fix add()", "make it return 0", "write a lot"]
            assert "Fixed: add() now adds." in client.text()
            assert [s.kind for s in client.of_kind("tool_call")][:2] == ["read", "edit"]
    session_files = list((la_env.home / "data" / "sessions").rglob(f"{sid}.jsonl"))
    assert len(session_files) == 1
    types = [json.loads(line)["type"] for line in session_files[0].read_text().splitlines()]
    assert types.count("turn_started") == 3


async def test_a_permission_the_editor_never_answers_ends_with_the_cancel(la_env) -> None:
    work = la_env.workspace
    (work / "a.txt").write_text("one\n")
    client = RecordingClient(hold=asyncio.Event())
    with ScriptedModelServer([edit_call("a.txt", "one", "two"), "all right"]) as model:
        async with acp_agent(la_env.env, work, "--base-url", model.base_url, client=client) as (conn, client, _):
            sid = (await conn.new_session(cwd=str(work), mcp_servers=[])).session_id
            turn = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[text_block("change it")]))
            await asyncio.wait_for(client.asked.wait(), 60)
            await conn.cancel(session_id=sid)
            client.hold.set()
            assert (await asyncio.wait_for(turn, 60)).stop_reason == "cancelled"
            # The cancelled call got its result and the turn its end: the next request is well-formed.
            client.hold = None
            after = await asyncio.wait_for(conn.prompt(session_id=sid, prompt=[text_block("never mind")]), 60)
            assert after.stop_reason == "end_turn"
            sent = model.requests[-1]["messages"]
        assert (work / "a.txt").read_text() == "one\n"
    calls = [i for i, m in enumerate(sent) if m["role"] == "assistant" and m.get("tool_calls")]
    assert calls and sent[calls[0] + 1]["role"] == "tool"
    [session_file] = (la_env.home / "data" / "sessions").rglob(f"{sid}.jsonl")
    ends = [json.loads(line) for line in session_file.read_text().splitlines() if '"turn_finished"' in line]
    assert [e["reason"] for e in ends] == ["cancelled", "done"]


async def test_modes_and_the_policy_are_the_ones_the_cli_has(la_env) -> None:
    work = la_env.workspace
    turns = [ScriptedTurn(tool_calls=[ScriptedToolCall("bash", {"command": "echo hi > out.txt"})]), "ok"]
    with ScriptedModelServer(turns) as model:
        async with acp_agent(la_env.env, work, "--base-url", model.base_url, "--mode", "read-only") as (
            conn,
            client,
            _,
        ):
            new = await conn.new_session(cwd=str(work), mcp_servers=[])
            assert new.modes.current_mode_id == "read-only"
            with pytest.raises(RequestError):
                await conn.set_session_mode(session_id=new.session_id, mode_id="yolo")
            done = await asyncio.wait_for(conn.prompt(session_id=new.session_id, prompt=[text_block("run it")]), 120)
            assert done.stop_reason == "end_turn"
            # read-only refuses bash without asking anyone.
            assert client.permissions == []
            assert not (work / "out.txt").exists()


async def test_bad_requests_are_errors_not_crashes(la_env) -> None:
    work = la_env.workspace
    with ScriptedModelServer(["fine"]) as model:
        async with acp_agent(la_env.env, work, "--base-url", model.base_url) as (conn, client, process):
            with pytest.raises(RequestError):
                await conn.prompt(session_id="no-such-session", prompt=[text_block("hi")])
            with pytest.raises(RequestError):
                await conn.new_session(cwd="relative/dir", mcp_servers=[])
            with pytest.raises(RequestError):
                await conn.load_session(cwd=str(work), session_id="../../etc/passwd", mcp_servers=[])
            with pytest.raises(RequestError):  # "last" is the CLI's word, not a session id
                await conn.load_session(cwd=str(work), session_id="last", mcp_servers=[])
            sid = (await conn.new_session(cwd=str(work), mcp_servers=[])).session_id
            done = await asyncio.wait_for(conn.prompt(session_id=sid, prompt=[text_block("hi")]), 60)
            assert done.stop_reason == "end_turn" and client.text() == "fine"
            assert process.returncode is None


def test_stdout_flags_that_make_no_sense_are_one_line(la_env) -> None:
    result = la_env.run("acp", "--resume", "last")
    assert result.code == 2 and "session/load" in result.stderr
    result = la_env.run("acp", "--profile", "no-such")
    assert result.code == 2 and "unknown profile" in result.stderr


async def test_the_editors_mcp_servers_are_connected_and_their_tools_offered(la_env) -> None:
    import sys
    from pathlib import Path

    from acp.schema import EnvVariable, McpServerStdio

    work = la_env.workspace
    echo = Path(__file__).parent / "mcp_servers" / "echo_server.py"
    server = McpServerStdio(
        name="echo", command=sys.executable, args=[str(echo)], env=[EnvVariable(name="X", value="1")]
    )
    turns = [ScriptedTurn(tool_calls=[ScriptedToolCall("mcp__echo__echo", {"text": "from the editor"})]), "done"]
    client = RecordingClient(answers=["once"])
    with ScriptedModelServer(turns) as model:
        async with acp_agent(la_env.env, work, "--base-url", model.base_url, client=client) as (conn, client, _):
            sid = (await conn.new_session(cwd=str(work), mcp_servers=[server])).session_id
            done = await asyncio.wait_for(conn.prompt(session_id=sid, prompt=[text_block("echo")]), 120)
            assert done.stop_reason == "end_turn"
        offered = [tool["function"]["name"] for tool in model.requests[0]["tools"]]
    assert "mcp__echo__echo" in offered
    finished = [u for u in client.of_kind("tool_call_update") if u.status == "completed"]
    assert "from the editor" in finished[0].content[0].content.text


@pytest.mark.server
async def test_a_turn_on_the_real_tiny_dflash_server_carries_its_speed_and_acceptance(
    la_env, llama_server_binary
) -> None:
    work = la_env.workspace
    async with acp_agent(la_env.env, work, "--profile", "tiny-dflash", "--mode", "read-only") as (conn, client, _):
        sid = (await conn.new_session(cwd=str(work), mcp_servers=[])).session_id
        done = await asyncio.wait_for(
            conn.prompt(session_id=sid, prompt=[text_block("Write a Python function that adds two numbers.")]), 240
        )
    assert done.stop_reason in ("end_turn", "max_tokens")
    # The server's loading reached the editor as messages before the answer.
    assert "llama-server" in client.text("agent_thought_chunk")
    summary = done.field_meta["localagent"]
    assert summary["generated"] > 0 and summary["tokens_per_second"] > 0
    assert summary["drafted"] > 0 and summary["accepted"] > 0 and summary["acceptance"] > 0  # the DFlash draft
    live = [meta["localagent"]["metrics"] for _sid, _u, meta in client.updates if "localagent" in meta]
    # Live, during the turn: the updates carried the draft counts as they grew.
    assert any(m["drafted"] and m["accepted"] and m["tokens_per_second"] for m in live)


async def test_a_model_editing_through_a_symlinked_directory_leaks_nothing_to_the_editor(la_env, tmp_path) -> None:
    """A hostile repository links a directory out of the workspace; a hostile model edits a file
    through it. The edit is refused, and no update carries the outside file's text."""
    work = la_env.workspace
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("token=hunter2\n")
    (work / "docs").symlink_to(outside)
    turns = [edit_call("docs/secret.txt", "hunter2", "x"), "done"]
    client = RecordingClient(answers=["once"])
    with ScriptedModelServer(turns) as model:
        async with acp_agent(la_env.env, work, "--base-url", model.base_url, "--mode", "full-auto", client=client) as (
            conn,
            client,
            _,
        ):
            sid = (await conn.new_session(cwd=str(work), mcp_servers=[])).session_id
            await asyncio.wait_for(conn.prompt(session_id=sid, prompt=[text_block("edit it")]), 60)
    assert (outside / "secret.txt").read_text() == "token=hunter2\n"
    shown = json.dumps([u.model_dump(mode="json") for _sid, u, _meta in client.updates])
    assert "hunter2" not in shown.replace('"old_string": "hunter2"', "")
    assert [u.status for u in client.of_kind("tool_call_update")] == ["failed"]


def test_an_attached_resource_is_the_same_block_as_an_at_file_mention() -> None:
    from acp.schema import EmbeddedResourceContentBlock, TextResourceContents

    from localagent.acp.prompt_text import prompt_text
    from tui.attachments import CONTEXT_MARK, MAX_FILE_CHARS

    fenced = EmbeddedResourceContentBlock(
        type="resource", resource=TextResourceContents(uri="file:///w/a.py", text="s = '```'\n")
    )
    big = EmbeddedResourceContentBlock(
        type="resource", resource=TextResourceContents(uri="file:///w/b.txt", text="x" * (MAX_FILE_CHARS + 5))
    )
    text = prompt_text([text_block("look"), fenced, big])
    assert text.startswith(f"look\n\n{CONTEXT_MARK}\n\nFile /w/a.py")
    assert "\n````\ns = '```'\n````" in text  # a fence longer than any backtick run inside
    assert "[... 5 more characters not attached; view /w/b.txt to read the rest]" in text
