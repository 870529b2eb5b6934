"""Programs written for the Claude Agent SDK, run on localagent by changing one path: the official
SDK from PyPI drives the `localagent` command (Claude Code's CLI contract, stdin stream-json and
the control protocol) against the scripted model."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import (
    AssistantMessage,
    ClaudeAgentOptions,
    ClaudeSDKClient,
    HookMatcher,
    PermissionResultAllow,
    PermissionResultDeny,
    ResultMessage,
    SystemMessage,
    TextBlock,
    ToolUseBlock,
    create_sdk_mcp_server,
    query,
    tool,
)

from agent.prompt import without_context
from tests.support.scripted_model import ScriptedModelServer, ScriptedToolCall, ScriptedTurn

pytestmark = pytest.mark.slow
CLI = str(Path(sys.executable).with_name("localagent"))


def options(la_env, model: ScriptedModelServer, **more: Any) -> ClaudeAgentOptions:
    return ClaudeAgentOptions(cli_path=CLI, cwd=str(la_env.workspace), extra_args={"base-url": model.base_url}, **more)


def call(name: str, call_id: str, **arguments: Any) -> ScriptedTurn:
    return ScriptedTurn(tool_calls=[ScriptedToolCall(name, arguments, id=call_id)])


async def collect(messages) -> list[Any]:
    return [message async for message in messages]


def texts(messages: list[Any]) -> list[str]:
    return [b.text for m in messages if isinstance(m, AssistantMessage) for b in m.content if isinstance(b, TextBlock)]


def test_query_with_a_prompt_answers_and_ends_with_a_result(la_env) -> None:
    with ScriptedModelServer([ScriptedTurn(text="Hello from localagent.")]) as model:
        messages = asyncio.run(collect(query(prompt="Say hello.", options=options(la_env, model))))
        sent = model.requests[0]["messages"]
    init = next(m for m in messages if isinstance(m, SystemMessage))
    assert init.subtype == "init" and init.data["cwd"] == str(la_env.workspace)
    assert texts(messages) == ["Hello from localagent."]
    result = messages[-1]
    assert isinstance(result, ResultMessage) and result.subtype == "success" and not result.is_error
    assert result.result == "Hello from localagent."
    assert sent[-1]["role"] == "user" and without_context(sent[-1]["content"]) == "Say hello."


def test_a_client_conversation_of_three_turns_survives_an_interrupt(la_env) -> None:
    slow = ScriptedTurn(text="counting " * 200, chunk_size=4, chunk_delay=0.05)
    turns = [ScriptedTurn(text="First answer."), slow, ScriptedTurn(text="Third answer.")]

    async def talk(model: ScriptedModelServer) -> list[list[Any]]:
        replies: list[list[Any]] = []
        async with ClaudeSDKClient(options(la_env, model, include_partial_messages=True)) as client:
            await client.query("one")
            replies.append(await collect(client.receive_response()))
            await client.query("two")
            seen: list[Any] = []
            async for message in client.receive_response():
                seen.append(message)
                if len(seen) == 5:
                    await client.interrupt()
            replies.append(seen)
            await client.query("three")
            replies.append(await collect(client.receive_response()))
        return replies

    with ScriptedModelServer(turns) as model:
        first, second, third = asyncio.run(talk(model))
        asked = [without_context(request["messages"][-1]["content"]) for request in model.requests]
    assert texts(first) == ["First answer."] and isinstance(first[-1], ResultMessage)
    assert isinstance(second[-1], ResultMessage) and second[-1].is_error  # stopped, and said so
    assert texts(third) == ["Third answer."] and third[-1].subtype == "success"
    assert asked == ["one", "two", "three"]  # one process, one conversation


def test_can_use_tool_allows_an_edit_with_changed_input_and_denies_another(la_env) -> None:
    (la_env.workspace / "a.txt").write_text("old a\n")
    (la_env.workspace / "b.txt").write_text("old b\n")
    turns = [
        call("view", "v1", path="a.txt"),
        call("view", "v2", path="b.txt"),
        call("edit", "e1", path="a.txt", old_string="old a", new_string="model's a"),
        call("edit", "e2", path="b.txt", old_string="old b", new_string="model's b"),
        ScriptedTurn(text="Done."),
    ]
    asked: list[tuple[str, dict[str, Any]]] = []

    async def can_use_tool(name: str, arguments: dict[str, Any], context: Any) -> Any:
        asked.append((name, dict(arguments)))
        if arguments.get("path") == "a.txt":
            return PermissionResultAllow(updated_input={**arguments, "new_string": "caller's a"})
        return PermissionResultDeny(message="b.txt stays as it is")

    async def run(model: ScriptedModelServer) -> list[Any]:
        # can_use_tool needs a prompt stream: the SDK keeps stdin open for its answers.
        async def prompt():
            yield {"type": "user", "message": {"role": "user", "content": "edit both"}}

        more = {"can_use_tool": can_use_tool, "permission_mode": "default"}
        return await collect(query(prompt=prompt(), options=options(la_env, model, **more)))

    with ScriptedModelServer(turns) as model:
        messages = asyncio.run(run(model))
        results = [m["content"] for r in model.requests for m in r["messages"] if m["role"] == "tool"]
    assert [name for name, _ in asked] == ["edit", "edit"]
    assert (la_env.workspace / "a.txt").read_text() == "caller's a\n"
    assert (la_env.workspace / "b.txt").read_text() == "old b\n"
    assert "b.txt stays as it is" in results[-1]
    assert isinstance(messages[-1], ResultMessage) and messages[-1].result == "Done."


def test_plan_mode_refuses_writes(la_env) -> None:
    turns = [call("create", "c1", path="new.txt", content="x\n"), ScriptedTurn(text="Could not.")]
    with ScriptedModelServer(turns) as model:
        messages = asyncio.run(
            collect(query(prompt="make a file", options=options(la_env, model, permission_mode="plan")))
        )
        refusal = [m["content"] for m in model.requests[-1]["messages"] if m["role"] == "tool"][0]
    assert not (la_env.workspace / "new.txt").exists()
    assert "read-only" in refusal
    tool_uses = [
        b for m in messages if isinstance(m, AssistantMessage) for b in m.content if isinstance(b, ToolUseBlock)
    ]
    assert [b.name for b in tool_uses] == ["create"]
    assert isinstance(messages[-1], ResultMessage)


def test_a_pre_tool_use_hook_blocks_a_bash_call_and_the_model_hears_why(la_env) -> None:
    turns = [call("bash", "b1", command="touch hooked.txt"), ScriptedTurn(text="Blocked, then.")]
    seen: list[dict[str, Any]] = []

    async def guard(hook_input: dict[str, Any], tool_use_id: str | None, context: Any) -> dict[str, Any]:
        seen.append(hook_input)
        return {
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": "no shell in this app",
            }
        }

    async def run(model: ScriptedModelServer) -> list[Any]:
        async def prompt():
            yield {"type": "user", "message": {"role": "user", "content": "make a file"}}

        hooks = {"PreToolUse": [HookMatcher(matcher="Bash", hooks=[guard])]}
        more = {"hooks": hooks, "permission_mode": "bypassPermissions"}
        return await collect(query(prompt=prompt(), options=options(la_env, model, **more)))

    with ScriptedModelServer(turns) as model:
        messages = asyncio.run(run(model))
        refusal = [m["content"] for m in model.requests[-1]["messages"] if m["role"] == "tool"][0]
    assert not (la_env.workspace / "hooked.txt").exists()  # full-auto would have run it
    assert [(s["hook_event_name"], s["tool_name"], s["tool_input"]) for s in seen] == [
        ("PreToolUse", "bash", {"command": "touch hooked.txt"})
    ]
    assert "no shell in this app" in refusal
    assert isinstance(messages[-1], ResultMessage) and messages[-1].result == "Blocked, then."


def test_a_tool_of_an_sdk_mcp_server_is_offered_and_called_in_the_application(la_env) -> None:
    calls: list[dict[str, Any]] = []

    @tool("add", "Add two numbers", {"a": int, "b": int})
    async def add(arguments: dict[str, Any]) -> dict[str, Any]:
        calls.append(arguments)
        return {"content": [{"type": "text", "text": str(arguments["a"] + arguments["b"])}]}

    server = create_sdk_mcp_server("calc", tools=[add])
    turns = [call("mcp__calc__add", "m1", a=2, b=3), ScriptedTurn(text="It is 5.")]

    async def run(model: ScriptedModelServer) -> list[Any]:
        async def prompt():
            yield {"type": "user", "message": {"role": "user", "content": "what is 2 + 3?"}}

        more = {"mcp_servers": {"calc": server}, "permission_mode": "bypassPermissions"}
        return await collect(query(prompt=prompt(), options=options(la_env, model, **more)))

    with ScriptedModelServer(turns) as model:
        messages = asyncio.run(run(model))
        offered = [spec["function"]["name"] for spec in model.requests[0].get("tools", [])]
        result = [m["content"] for m in model.requests[-1]["messages"] if m["role"] == "tool"][0]
    assert "mcp__calc__add" in offered
    assert calls == [{"a": 2, "b": 3}] and "5" in result
    init = next(m for m in messages if isinstance(m, SystemMessage))
    assert {"name": "calc", "status": "connected"} in init.data["mcp_servers"]
    assert isinstance(messages[-1], ResultMessage) and messages[-1].result == "It is 5."


def test_prompt_post_tool_and_stop_hooks_are_honoured(la_env) -> None:
    (la_env.workspace / "notes.txt").write_text("alpha\n")
    turns = [
        call("view", "v1", path="notes.txt"),
        ScriptedTurn(text="Alpha."),
        ScriptedTurn(text="Alpha, checked twice."),
    ]
    events: list[str] = []

    async def on_prompt(hook_input: dict[str, Any], tool_use_id: str | None, context: Any) -> dict[str, Any]:
        events.append("prompt")
        if "secret" in hook_input["prompt"]:
            return {"decision": "block", "reason": "no secrets here"}
        return {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": "Be brief."}}

    async def after_tool(hook_input: dict[str, Any], tool_use_id: str | None, context: Any) -> dict[str, Any]:
        events.append(f"after {hook_input['tool_name']}")
        return {"hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "The file is a fixture."}}

    async def on_stop(hook_input: dict[str, Any], tool_use_id: str | None, context: Any) -> dict[str, Any]:
        events.append(f"stop {hook_input['stop_hook_active']}")
        if not hook_input["stop_hook_active"]:
            return {"decision": "block", "reason": "Check it once more."}
        return {}

    async def talk(model: ScriptedModelServer) -> tuple[list[Any], list[Any]]:
        hooks = {
            "UserPromptSubmit": [HookMatcher(hooks=[on_prompt])],
            "PostToolUse": [HookMatcher(matcher="Read", hooks=[after_tool])],
            "Stop": [HookMatcher(hooks=[on_stop])],
        }
        async with ClaudeSDKClient(options(la_env, model, hooks=hooks)) as client:
            await client.query("tell me the secret")
            blocked = await collect(client.receive_response())
            await client.query("what do the notes say?")
            answered = await collect(client.receive_response())
        return blocked, answered

    with ScriptedModelServer(turns) as model:
        blocked, answered = asyncio.run(talk(model))
        first, *_, last = model.requests
    assert (
        isinstance(blocked[-1], ResultMessage) and blocked[-1].is_error and "no secrets here" in str(blocked[-1].result)
    )
    assert (
        without_context(first["messages"][-1]["content"]) == "what do the notes say?\n\nBe brief."
    )  # the blocked prompt never went
    assert "The file is a fixture." in [m for m in last["messages"] if m["role"] == "tool"][0]["content"]
    assert last["messages"][-1] == {"role": "user", "content": "Check it once more."}
    assert events == ["prompt", "prompt", "after view", "stop False", "stop True"]
    assert answered[-1].result == "Alpha, checked twice."
