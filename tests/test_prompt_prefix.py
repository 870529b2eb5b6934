"""One prefix for every repository and session: the fixed instructions and every tool schema come
first, and the repository's own context after them, so a new session elsewhere reuses the
server's cached prefix. Checked on the real llama-server (the tiny model, the tiny profiles'
ChatML-with-tools template) with the requests two sessions in two repositories really send."""

from __future__ import annotations

import json
from pathlib import Path

import httpx2
import pytest

from tests.support.scripted_model import ScriptedModelServer, ScriptedTurn

pytestmark = pytest.mark.slow


def first_request(la_env, workspace: Path, rules: str) -> dict:
    """The first model request of a new session in ``workspace``, as the agent sends it."""
    workspace.mkdir()
    (workspace / "AGENTS.md").write_text(rules)
    with ScriptedModelServer([ScriptedTurn(text="ok")]) as model:
        result = la_env.run("run", "list the files", "--base-url", model.base_url, cwd=workspace, input="")
        assert result.code == 0, result.stderr
        return model.requests[0]


def tokens(url: str, text: str) -> list[int]:
    return httpx2.post(f"{url}/tokenize", json={"content": text}, timeout=60).json()["tokens"]


def rendered(url: str, request: dict) -> str:
    body = {"messages": request["messages"], "tools": request["tools"]}
    return httpx2.post(f"{url}/apply-template", json=body, timeout=60).json()["prompt"]


def test_a_session_in_another_repository_reuses_the_instructions_and_every_tool_schema(
    la_env, tiny_chatml_server
) -> None:
    first = first_request(la_env, la_env.workspace / "repo-a", "Use tabs.\n")
    second = first_request(la_env, la_env.workspace / "repo-b", "Use spaces; run make test.\n")
    assert first["messages"][0] == second["messages"][0]  # the system prompt names no repository
    assert json.dumps(first["tools"]) == json.dumps(second["tools"])  # built-ins, in one order

    prompt_a, prompt_b = rendered(tiny_chatml_server, first), rendered(tiny_chatml_server, second)
    fixed = prompt_a[: prompt_a.index("<|im_start|>user")]  # the system turn: instructions and tools
    assert fixed == prompt_b[: len(fixed)] and "</tools>" in fixed
    for spec in first["tools"]:
        assert json.dumps(spec["function"]["name"]) in fixed
    tokens_a, tokens_b = tokens(tiny_chatml_server, prompt_a), tokens(tiny_chatml_server, prompt_b)
    shared = next(i for i, (a, b) in enumerate(zip(tokens_a, tokens_b, strict=False)) if a != b)
    assert shared >= len(tokens(tiny_chatml_server, fixed)) - 1  # the last token may merge with what follows

    # And the server reuses it: the second session's first request reads only what is new.
    def ask(request: dict) -> dict:
        body = {"messages": request["messages"], "tools": request["tools"], "max_tokens": 1, "cache_prompt": True}
        return httpx2.post(f"{tiny_chatml_server}/v1/chat/completions", json=body, timeout=300).json()["timings"]

    ask(first)
    timings = ask(second)
    assert timings["cache_n"] >= len(tokens(tiny_chatml_server, fixed)) - 1, timings
    print(
        f"prefix shared across repositories: {timings['cache_n']} of {timings['cache_n'] + timings['prompt_n']} tokens"
    )
