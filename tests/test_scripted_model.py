"""The scripted model server, driven by the real openai client."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import openai
import pytest

from tests.support.scripted_model import (
    CONTEXT_OVERFLOW_MESSAGE,
    EXHAUSTED_TEXT,
    ScriptedModelServer,
    ScriptedToolCall,
    ScriptedTurn,
)

TIMING_KEYS = {
    "cache_n",
    "prompt_n",
    "prompt_ms",
    "prompt_per_second",
    "predicted_n",
    "predicted_ms",
    "predicted_per_second",
}


def client(srv: ScriptedModelServer) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=srv.base_url, api_key="x", max_retries=0, timeout=10)


def get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=5) as resp:
        return json.load(resp)


async def collect(srv: ScriptedModelServer, messages: list[dict[str, Any]], **extra: Any) -> list[Any]:
    async with client(srv) as c:
        stream = await c.chat.completions.create(model="m", messages=messages, stream=True, **extra)
        return [chunk async for chunk in stream]


async def test_text_and_reasoning_deltas_reassemble_with_per_token_timings() -> None:
    turn = ScriptedTurn(text="Hello there, this is a streamed answer.", reasoning="Think first.", chunk_size=5)
    async with ScriptedModelServer([turn], speculative=True) as srv:
        chunks = await collect(
            srv,
            [{"role": "user", "content": "hi"}],
            stream_options={"include_usage": True},
            extra_body={"timings_per_token": True},
        )
    assert srv.remaining == 0 and srv.exhausted == 0
    assert chunks[0].choices[0].delta.role == "assistant"
    body = [c for c in chunks if c.choices]
    text = "".join(c.choices[0].delta.content or "" for c in body)
    reasoning = "".join((c.choices[0].delta.model_extra or {}).get("reasoning_content") or "" for c in body)
    assert text == turn.text and reasoning == turn.reasoning
    assert body[-1].choices[0].finish_reason == "stop"
    # Every chunk carries cumulative timings; draft fields once something was generated.
    timings = [c.model_extra.get("timings") for c in chunks]
    assert all(t is not None and t.keys() >= TIMING_KEYS for t in timings)
    predicted = [t["predicted_n"] for t in timings]
    assert predicted == sorted(predicted) and predicted[-1] > 0
    assert "draft_n" in timings[-1] and timings[-1]["draft_n_accepted"] <= timings[-1]["draft_n"]
    # Usage comes last with no choices.
    assert chunks[-1].choices == []
    assert chunks[-1].usage.completion_tokens == timings[-1]["predicted_n"]
    assert srv.requests[0]["timings_per_token"] is True


async def test_tool_call_deltas_accumulate_by_index() -> None:
    calls = [
        ScriptedToolCall("view", {"path": "src/app.py", "limit": 40}),
        ScriptedToolCall("bash", {"command": "ls -la && echo 'done'"}, id="call_fixed"),
    ]
    async with ScriptedModelServer([ScriptedTurn(text="Looking.", tool_calls=calls, chunk_size=4)]) as srv:
        chunks = await collect(srv, [{"role": "user", "content": "go"}])
    acc: dict[int, dict[str, str]] = {}
    finish = None
    for chunk in chunks:
        if not chunk.choices:
            continue
        choice = chunk.choices[0]
        finish = choice.finish_reason or finish
        for tc in choice.delta.tool_calls or []:
            slot = acc.setdefault(tc.index, {"id": "", "name": "", "arguments": ""})
            if tc.id:
                assert not slot["id"], "only the first delta carries the id"
                slot["id"] = tc.id
                assert tc.type == "function"
            if tc.function and tc.function.name:
                slot["name"] = tc.function.name
            if tc.function and tc.function.arguments:
                slot["arguments"] += tc.function.arguments
    assert finish == "tool_calls"
    assert [acc[i]["name"] for i in sorted(acc)] == ["view", "bash"]
    assert json.loads(acc[0]["arguments"]) == {"path": "src/app.py", "limit": 40}
    assert json.loads(acc[1]["arguments"]) == {"command": "ls -la && echo 'done'"}
    assert acc[1]["id"] == "call_fixed" and acc[0]["id"].startswith("call_")
    # Without timings_per_token only the last chunk carries timings.
    with_timings = [i for i, c in enumerate(chunks) if (c.model_extra or {}).get("timings")]
    assert with_timings == [len(chunks) - 1]
    assert "draft_n" not in chunks[-1].model_extra["timings"]


async def test_malformed_arguments_are_sent_verbatim_and_callable_turns_see_requests() -> None:
    seen: list[dict[str, Any]] = []

    def react(request: dict[str, Any]) -> ScriptedTurn:
        seen.append(request)
        return ScriptedTurn(text=f"tool said: {request['messages'][-1]['content']}")

    turns = [ScriptedTurn(tool_calls=[ScriptedToolCall("view", '{"path": "a.py",')]), react]
    async with ScriptedModelServer(turns) as srv:
        async with client(srv) as c:
            first = await c.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
            tc = first.choices[0].message.tool_calls[0]
            assert tc.function.arguments == '{"path": "a.py",'
            assert first.choices[0].finish_reason == "tool_calls"
            assert "timings" in first.model_extra
            messages = [
                {"role": "user", "content": "x"},
                {"role": "assistant", "content": None, "tool_calls": [tc.model_dump()]},
                {"role": "tool", "tool_call_id": tc.id, "content": "ERROR bad json"},
            ]
            second = await c.chat.completions.create(model="m", messages=messages)
        assert second.choices[0].message.content == "tool said: ERROR bad json"
        assert seen[0]["messages"][-1]["role"] == "tool"
        assert len(srv.requests) == 2


async def test_die_midstream_raises_in_client() -> None:
    async with ScriptedModelServer([ScriptedTurn(text="x" * 200, chunk_size=2, die_midstream=True)]) as srv:
        with pytest.raises(openai.APIConnectionError):
            await collect(srv, [{"role": "user", "content": "hi"}])


async def test_http_error_surfaces_as_bad_request() -> None:
    async with ScriptedModelServer([ScriptedTurn.context_overflow(), "after"], n_ctx=4096) as srv:
        async with client(srv) as c:
            with pytest.raises(openai.BadRequestError) as info:
                await c.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}], stream=True)
            err = info.value.body
            assert isinstance(err, dict)
            assert err["type"] == "exceed_context_size_error" and err["n_ctx"] == 4096
            assert err["message"] == CONTEXT_OVERFLOW_MESSAGE and err["n_prompt_tokens"] > 0
            ok = await c.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
            assert ok.choices[0].message.content == "after"


async def test_prompt_larger_than_n_ctx_is_rejected_without_using_a_turn() -> None:
    async with ScriptedModelServer(["kept"], n_ctx=64) as srv:
        async with client(srv) as c:
            with pytest.raises(openai.BadRequestError):
                await c.chat.completions.create(model="m", messages=[{"role": "user", "content": "y" * 1000}])
        assert srv.remaining == 1 and len(srv.requests) == 1


async def test_prompt_cache_emulation_on_appended_request() -> None:
    history = [
        {"role": "system", "content": "You are a careful coding agent. " * 20},
        {"role": "user", "content": "hi"},
    ]
    async with ScriptedModelServer(["one", "two"]) as srv:
        first = await collect(srv, history)
        second = await collect(
            srv, history + [{"role": "assistant", "content": "one"}, {"role": "user", "content": "more"}]
        )
    t1 = first[-1].model_extra["timings"]
    t2 = second[-1].model_extra["timings"]
    assert t1["cache_n"] == 0 and t1["prompt_n"] > 100
    assert t2["cache_n"] > 100 and t2["prompt_n"] < 20
    assert t2["cache_n"] + t2["prompt_n"] > t1["prompt_n"]


async def test_script_exhaustion_is_recorded() -> None:
    async with ScriptedModelServer([]) as srv:
        async with client(srv) as c:
            r = await c.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert r.choices[0].message.content == EXHAUSTED_TEXT
    assert srv.exhausted == 1


def test_info_endpoints_sync() -> None:
    with ScriptedModelServer(["a"], n_ctx=2048, model="tiny", speculative=True) as srv:
        assert get_json(srv.url + "/health") == {"status": "ok"}
        models = get_json(srv.base_url + "/models")
        assert models["data"][0]["id"] == "tiny" and models["data"][0]["meta"]["n_ctx"] == 2048
        assert get_json(srv.url + "/props")["default_generation_settings"]["n_ctx"] == 2048
        with openai.OpenAI(base_url=srv.base_url, api_key="x", max_retries=0) as sync:
            sync.chat.completions.create(model="m", messages=[{"role": "user", "content": "hello world"}])
        with urllib.request.urlopen(srv.url + "/metrics", timeout=5) as resp:
            metrics = resp.read().decode()
        srv.loading = True
        with pytest.raises(urllib.error.HTTPError) as info:
            get_json(srv.url + "/health")
        info.value.close()
        assert info.value.code == 503
    assert "llamacpp:prompt_tokens_total" in metrics
    assert "llamacpp:tokens_predicted_total 1" in metrics
    assert "llamacpp:spec_decode_num_draft_tokens_total" in metrics


def test_failing_turn_callable_is_reported_at_exit() -> None:
    def broken(request: dict[str, Any]) -> ScriptedTurn:
        raise KeyError("nope")

    srv = ScriptedModelServer([broken])
    with pytest.raises(RuntimeError, match="callable raised"):
        with srv:
            with openai.OpenAI(base_url=srv.base_url, api_key="x", max_retries=0) as sync:
                with pytest.raises(openai.InternalServerError):
                    sync.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
