"""Drafting chosen per request: the request's kind, the break-even acceptance derived from the
server's timings, and the choice that follows from a recorded acceptance history; the probe that
tells a server that honours per-request limits from one that ignores them."""

from __future__ import annotations

import asyncio
import http.server
import json
import threading
from collections.abc import Iterator

import pytest

from agent.speculation_policy import RETRY_AFTER, SpeculationChoice, SpeculationPolicy, request_kind
from server.speculation_probe import honours_request_limits


def call(call_id: str, name: str) -> dict:
    return {"role": "assistant", "content": "", "tool_calls": [{"id": call_id, "function": {"name": name}}]}


def result(call_id: str) -> dict:
    return {"role": "tool", "tool_call_id": call_id, "content": "x"}


USER = [{"role": "system", "content": "s"}, {"role": "user", "content": "fix it"}]
AFTER_READ = [*USER, call("a", "view"), result("a")]
AFTER_BASH = [*USER, call("a", "view"), result("a"), call("b", "bash"), result("b")]


def timings(generated: int, drafted: int, accepted: int, t0: float = 10.0, per_drafted: float = 3.0) -> dict:
    """Timings as llama-server reports them, for a server whose plain step takes t0 ms and whose
    drafted tokens cost per_drafted ms each: generated = steps + accepted."""
    steps = generated - accepted
    return {
        "predicted_n": generated,
        "predicted_ms": steps * t0 + drafted * per_drafted,
        "draft_n": drafted,
        "draft_n_accepted": accepted,
    }


def test_the_kind_is_read_from_what_the_request_answers() -> None:
    assert request_kind(USER) == "after_user"
    assert request_kind(AFTER_READ) == "after_read"
    assert request_kind(AFTER_BASH) == "after_tool"
    assert request_kind([]) == "after_user"


def test_break_even_is_the_cost_of_a_drafted_token_in_tokens_worth_of_time() -> None:
    policy = SpeculationPolicy()
    first = policy.choose(USER)
    assert first.n_max is None and "measuring" in first.reason
    policy.observe(first, timings(generated=40, drafted=30, accepted=20))
    # Drafts were seen but no plain decoding yet: one request goes without drafts to measure t0.
    probe = policy.choose(AFTER_READ)
    assert probe.n_max == 0 and "measure decoding without drafts" in probe.reason
    policy.observe(probe, timings(generated=20, drafted=0, accepted=0))
    assert policy.ms_per_token == pytest.approx(10.0)
    # 3 ms per drafted token against 10 ms per token: drafting pays above 30 % acceptance.
    assert policy.break_even == pytest.approx(0.3)


def test_a_kind_below_break_even_goes_without_drafts_and_one_above_keeps_them() -> None:
    policy = SpeculationPolicy()
    policy.observe(SpeculationChoice("after_tool", 0, ""), timings(generated=30, drafted=0, accepted=0))
    # Prose after the user: 10 % accepted. Edits after a read: 90 %.
    for _ in range(3):
        policy.observe(SpeculationChoice("after_user", None, ""), timings(generated=30, drafted=20, accepted=2))
        policy.observe(SpeculationChoice("after_read", None, ""), timings(generated=60, drafted=50, accepted=45))
    prose = policy.choose(USER)
    assert prose.n_max == 0 and prose.request_fields() == {"speculative.n_max": 0}
    assert prose.reason == "after the user: drafting off, acceptance 10% < break-even 30%"
    edit = policy.choose(AFTER_READ)
    assert edit.n_max is None and edit.request_fields() == {}
    assert "acceptance 90% ≥ break-even 30%" in edit.reason


def test_a_kind_turned_off_is_tried_again_and_can_recover() -> None:
    policy = SpeculationPolicy()
    policy.observe(SpeculationChoice("after_tool", 0, ""), timings(generated=30, drafted=0, accepted=0))
    for _ in range(2):
        policy.observe(SpeculationChoice("after_user", None, ""), timings(generated=30, drafted=20, accepted=1))
    choices = [policy.choose(USER) for _ in range(RETRY_AFTER + 1)]
    assert [c.n_max for c in choices] == [0] * RETRY_AFTER + [None]
    assert "re-measure" in choices[-1].reason
    # The retry drafts well: acceptance climbs past break-even and drafting stays on.
    for _ in range(4):
        policy.observe(choices[-1], timings(generated=60, drafted=50, accepted=48))
    assert policy.choose(USER).n_max is None


def test_answers_without_timings_or_tokens_teach_nothing() -> None:
    policy = SpeculationPolicy()
    choice = policy.choose(USER)
    policy.observe(choice, None)
    policy.observe(choice, {"predicted_n": 1, "predicted_ms": 5.0})
    assert policy.ms_per_token is None and not policy.drafting_samples


# -- the probe ------------------------------------------------------------------------------------


@pytest.fixture
def stand_in() -> Iterator[dict]:
    """A /completion endpoint that honours speculative.n_max or, like b11434, ignores it."""
    state = {"honours": True, "status": 200, "bodies": []}

    class Server(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            state["bodies"].append(body)
            settings = {"n_predict": body["n_predict"], "speculative.types": "ngram_mod"}
            if state["honours"]:
                settings["speculative.n_max"] = body.get("speculative.n_max", -1)
            answer = json.dumps({"content": "2", "generation_settings": settings}).encode()
            self.send_response(state["status"])
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *_args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Server)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    state["url"] = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()


def test_the_probe_tells_a_patched_server_from_an_unpatched_one(stand_in: dict) -> None:
    assert asyncio.run(honours_request_limits(stand_in["url"])) is True
    assert stand_in["bodies"][0]["speculative.n_max"] == 0 and stand_in["bodies"][0]["n_predict"] == 1
    stand_in["honours"] = False
    assert asyncio.run(honours_request_limits(stand_in["url"])) is False
    stand_in["status"] = 404  # an engine without /completion
    assert asyncio.run(honours_request_limits(stand_in["url"])) is False
    assert asyncio.run(honours_request_limits("http://127.0.0.1:9")) is False  # nothing listening


# -- through the agent ------------------------------------------------------------------------------


async def _honours(_root: str, _key: str | None = None) -> bool:
    """A server that honours per-request settings, as far as the agent's probe can tell."""
    return True


async def test_the_agent_sends_its_choices_and_says_why_where_the_server_honours_them(la_env, monkeypatch) -> None:
    from agent.events import SpeculationChosen, TurnFinished
    from localagent.agent_setup import AgentOptions, build_agent
    from localagent.context import AppContext
    from tests.support.scripted_model import ScriptedModelServer, ScriptedToolCall, ScriptedTurn

    monkeypatch.setattr("server.speculation_probe.honours_request_limits", _honours)
    la_env.write_config('[agent]\nspeculation = "auto"\n')
    (la_env.workspace / "a.txt").write_text("alpha\n")
    turns = [
        ScriptedTurn(tool_calls=[ScriptedToolCall("view", {"path": "a.txt"})]),
        ScriptedTurn(tool_calls=[ScriptedToolCall("view", {"path": "a.txt"})]),
        ScriptedTurn(text="done"),
    ]
    with ScriptedModelServer(turns, speculative=True) as model:
        ctx = AppContext.load(la_env.workspace)
        runtime = await build_agent(ctx, AgentOptions(base_url=model.base_url, headless=True))
        try:
            events = [e async for e in runtime.agent.run_turn("read a.txt twice")]
        finally:
            await runtime.close()
        bodies = model.requests
    chosen = [e for e in events if isinstance(e, SpeculationChosen)]
    assert [c.kind for c in chosen] == ["after_user", "after_read", "after_read"]
    # Drafts were seen on the first answer and no plain decoding yet: the second goes without.
    assert "speculative.n_max" not in bodies[0] and bodies[1]["speculative.n_max"] == 0
    assert chosen[1].reason == "drafting off once to measure decoding without drafts"
    assert isinstance(events[-1], TurnFinished) and events[-1].final_text == "done"


async def test_by_default_every_request_goes_with_the_servers_settings(la_env, monkeypatch) -> None:
    from agent.events import SpeculationChosen
    from localagent.agent_setup import AgentOptions, build_agent
    from localagent.context import AppContext
    from tests.support.scripted_model import ScriptedModelServer, ScriptedTurn

    monkeypatch.setattr("server.speculation_probe.honours_request_limits", _honours)
    with ScriptedModelServer([ScriptedTurn(text="hi")], speculative=True) as model:
        ctx = AppContext.load(la_env.workspace)
        runtime = await build_agent(ctx, AgentOptions(base_url=model.base_url, headless=True))
        try:
            events = [e async for e in runtime.agent.run_turn("hello")]
        finally:
            await runtime.close()
        bodies = model.requests
    assert not any(isinstance(e, SpeculationChosen) for e in events)
    assert "speculative.n_max" not in bodies[0]
