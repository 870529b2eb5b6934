"""Drafting chosen per request: the request's kind, the break-even acceptance derived from the
server's timings, and the choice that follows from a recorded acceptance history; the probe that
tells a server that honours per-request limits from one that ignores them."""

from __future__ import annotations

import asyncio
import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.draft_costs import DraftCosts
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
    fit = policy.costs.fit()
    assert fit is not None and fit.ms_per_step == pytest.approx(10.0)
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
    for _ in range(3):
        policy.observe(SpeculationChoice("after_user", None, ""), timings(generated=30, drafted=20, accepted=1))
    choices = [policy.choose(USER) for _ in range(RETRY_AFTER + 1)]
    assert [c.n_max for c in choices] == [0] * RETRY_AFTER + [None]
    assert "re-measure" in choices[-1].reason
    # The retry drafts well: acceptance climbs past break-even and drafting stays on.
    for _ in range(4):
        policy.observe(choices[-1], timings(generated=60, drafted=50, accepted=48))
    assert policy.choose(USER).n_max is None


def test_a_server_that_drafts_when_told_not_to_gets_its_own_settings_from_then_on() -> None:
    policy = SpeculationPolicy()
    policy.observe(policy.choose(USER), timings(generated=40, drafted=30, accepted=20))
    for _ in range(2):
        probe = policy.choose(AFTER_READ)
        assert probe.n_max == 0 and not policy.ignored  # one such answer could be a stale counter
        policy.observe(probe, timings(generated=40, drafted=30, accepted=20))  # drafted anyway
    assert policy.ignored
    later = [policy.choose(messages) for messages in (USER, AFTER_READ, AFTER_BASH)]
    assert all(c.n_max is None and c.request_fields() == {} for c in later)
    assert later[0].reason == "the server drafted on a request sent without drafts: its own settings from now on"


def test_a_kind_that_stays_below_break_even_is_retried_ever_more_rarely() -> None:
    policy = SpeculationPolicy()
    policy.observe(SpeculationChoice("after_tool", 0, ""), timings(generated=30, drafted=0, accepted=0))
    for _ in range(3):
        policy.observe(SpeculationChoice("after_user", None, ""), timings(generated=30, drafted=20, accepted=1))
    tried = []
    for number in range(1, 100):
        choice = policy.choose(USER)
        if choice.n_max is None:
            tried.append(number)
            policy.observe(choice, timings(generated=30, drafted=20, accepted=1))  # still 5 %
    # Off 4 requests, then tried; off 8, tried; off 16; then off 32 at most between tries.
    assert tried == [5, 14, 31, 64, 97]


def test_where_a_drafted_token_costs_more_than_a_step_drafting_is_off_for_every_kind() -> None:
    """A drafter slower than the model it drafts for (a tiny target on a CPU): even every draft
    accepted loses time, so no kind is measured or retried."""
    policy = SpeculationPolicy()
    policy.observe(SpeculationChoice("after_user", 0, ""), timings(generated=40, drafted=0, accepted=0, t0=1.0))
    drafted_answer = timings(generated=60, drafted=50, accepted=50, t0=1.0, per_drafted=1.3)
    policy.observe(SpeculationChoice("after_read", None, ""), drafted_answer)
    assert policy.break_even == pytest.approx(1.3)
    # One drafted answer fits the costs exactly and says little: not acted on yet.
    assert policy.choose(AFTER_READ).n_max is None
    for _ in range(2):
        policy.observe(SpeculationChoice("after_read", None, ""), drafted_answer)
    choices = [policy.choose(messages) for messages in (USER, AFTER_READ, AFTER_BASH, USER)]
    assert [choice.n_max for choice in choices] == [0, 0, 0, 0]
    assert choices[0].reason == "drafting off: a drafted token costs more than a step saves (break-even 130%)"
    # Tried again after 4 requests, then after 8: the costs change as the context grows.
    retry = policy.choose(AFTER_BASH)
    assert retry.n_max is None and retry.reason == "drafting on again to re-measure what a draft costs"
    policy.observe(retry, drafted_answer)
    assert [policy.choose(USER).n_max for _ in range(9)] == [0] * 8 + [None]


def test_answers_without_timings_or_tokens_teach_nothing() -> None:
    policy = SpeculationPolicy()
    choice = policy.choose(USER)
    policy.observe(choice, None)
    policy.observe(choice, {"predicted_n": 1, "predicted_ms": 5.0})
    policy.observe(choice, {"predicted_n": 30, "predicted_ms": float("nan")})
    policy.observe(choice, {"predicted_n": 30, "predicted_ms": float("inf"), "draft_n": 10})
    policy.observe(choice, {"predicted_n": 30, "predicted_ms": 300.0, "draft_n": 10, "draft_n_accepted": 11})
    assert policy.costs.fit() is None and not policy.costs.drafted and not policy.costs.plain


def replayed(label: str) -> list[dict]:
    """One target's answers from a real replay of the edit-heavy sample (tests/fixtures/README.md)."""
    recorded = json.loads((Path(__file__).parent / "fixtures" / "speculation-timings-scripted-edits.json").read_text())
    return recorded["targets"][label]


def kind_ms_per_token(answers: list[dict], kind: str) -> float:
    chosen = [a for a in answers if a["kind"] == kind]
    return sum(a["predicted_ms"] for a in chosen) / sum(a["predicted_n"] for a in chosen)


def test_the_fit_finds_t0_and_the_cost_of_a_draft_together() -> None:
    costs = DraftCosts()
    # A plain step of 20 ms, 6 ms per drafted token; answers of every size, drafted or not.
    for steps, drafted in [(5, 0), (40, 60), (12, 0), (30, 90), (50, 20), (8, 48)]:
        costs.add(steps * 20.0 + drafted * 6.0, steps, drafted)
    fit = costs.fit()
    assert fit is not None
    assert fit.ms_per_step == pytest.approx(20.0) and fit.ms_per_drafted == pytest.approx(6.0)
    assert fit.break_even == pytest.approx(0.3)
    assert DraftCosts().fit() is None  # nothing yet
    only_drafted = DraftCosts()
    only_drafted.add(500.0, 20, 40)
    assert only_drafted.fit() is None  # t0 and c cannot be told apart without a plain answer


def test_acceptance_is_per_drafted_token_so_a_long_answer_outweighs_short_ones() -> None:
    policy = SpeculationPolicy()
    # Three short answers, every draft accepted, then one long one with 20 % accepted.
    for _ in range(3):
        policy.observe(SpeculationChoice("after_read", None, ""), timings(generated=6, drafted=4, accepted=4))
    policy.observe(SpeculationChoice("after_read", None, ""), timings(generated=120, drafted=200, accepted=40))
    acceptance = policy.kinds["after_read"].acceptance
    # Per answer the mean would be 80 %; per drafted token it is near the long answer's 20 %.
    assert acceptance is not None and 0.2 < acceptance < 0.3


def test_a_negative_fitted_cost_refits_t0_alone() -> None:
    costs = DraftCosts()
    # Drafted answers that came out faster per step than the plain one: noise, as on a busy machine.
    costs.add(400.0, 20, 0)
    costs.add(300.0, 20, 40)
    costs.add(310.0, 20, 30)
    fit = costs.fit()
    assert fit is not None and fit.ms_per_drafted == 0.0
    assert fit.ms_per_step == pytest.approx((400 + 300 + 310) / 60)


def test_the_break_even_from_a_real_replay_matches_what_drafting_cost_there() -> None:
    """On the edit-heavy sample, the same requests on the baseline give t0 per kind, and the
    fixed-settings server's drafted time over it gives what a drafted token really cost. The
    agent's fit, which sees only the drafting server's own timings, must land in that range."""
    baseline, fixed = replayed("tiny-baseline"), replayed("tiny")
    real = []
    for kind in ("after_read", "after_tool"):
        t0 = kind_ms_per_token(baseline, kind)
        answers = [a for a in fixed if a["kind"] == kind]
        steps = sum(a["predicted_n"] - a["draft_n_accepted"] for a in answers)
        drafted = sum(a["draft_n"] for a in answers)
        real.append((sum(a["predicted_ms"] for a in answers) - steps * t0) / drafted / t0)
    assert 0.25 < min(real) < max(real) < 0.55  # 0.30 after a tool, 0.47 after a read
    policy = SpeculationPolicy()
    for answer in fixed:
        policy.observe(SpeculationChoice(answer["kind"], None, ""), answer)
    assert policy.break_even is not None and min(real) <= policy.break_even <= max(real)
    # Both kinds accept more than that (51 % and 70 %): drafting stays on for both.
    for messages in (AFTER_READ, AFTER_BASH):
        choice = policy.choose(messages)
        assert choice.n_max is None and "≥ break-even" in choice.reason


# -- the probe ------------------------------------------------------------------------------------


@pytest.fixture
def stand_in() -> Iterator[dict]:
    """/props and /slots as llama-server answers them (shapes taken from the real b11434 with and
    without the patch): the patch adds speculative.n_max to the generation settings."""
    state = {"honours": True, "drafts": True, "status": 200, "slots_status": 200, "paths": []}

    class Server(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            state["paths"].append(self.path)
            if self.path == "/props":
                params = {"speculative.types": "none"}
                if state["honours"]:
                    params |= {"speculative.n_max": -1, "speculative.p_min": -1.0}
                status, answer = state["status"], {"default_generation_settings": {"params": params, "n_ctx": 512}}
            elif self.path == "/slots":
                status, answer = state["slots_status"], [{"id": 0, "speculative": state["drafts"]}]
            else:
                status, answer = 404, {"error": "not found"}
            data = state.get("raw", {}).get(self.path) or json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self) -> None:  # a probe must not take a slot
            state["paths"].append(f"POST {self.path}")
            self.send_response(500)
            self.end_headers()

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
    probe = lambda: asyncio.run(honours_request_limits(stand_in["url"]))  # noqa: E731
    assert probe() is True
    assert stand_in["paths"] == ["/props", "/slots"]  # reads only: no slot taken, no cache evicted
    stand_in["slots_status"] = 501  # slots hidden (--no-slots): it may draft
    assert probe() is True
    stand_in["slots_status"], stand_in["drafts"] = 200, False  # patched, but nothing drafts
    assert probe() is False
    stand_in["drafts"], stand_in["honours"] = True, False  # b11434 as released
    assert probe() is False
    stand_in["status"] = 404  # an engine without /props (vLLM, an OpenAI-style API)
    assert probe() is False
    assert not any(path.startswith("POST") for path in stand_in["paths"])
    assert asyncio.run(honours_request_limits("http://127.0.0.1:9")) is False  # nothing listening


def test_a_server_answering_nonsense_gets_no_per_request_choices_and_no_traceback(stand_in: dict) -> None:
    """Whatever answers at the address (a proxy, another program on the port) may send anything."""
    probe = lambda: asyncio.run(honours_request_limits(stand_in["url"]))  # noqa: E731
    for props in (b"not json", b"[1, 2]", b'{"default_generation_settings": "x"}',
                  b'{"default_generation_settings": {"params": ["speculative.n_max"]}}', b"null"):  # fmt: skip
        stand_in["raw"] = {"/props": props}
        assert probe() is False, props
    # Patched /props, but /slots in a shape no llama-server sends: whether it drafts is unknown.
    for slots in (b"not json", b'{"slots": []}', b'"x"'):
        stand_in["raw"] = {"/slots": slots}
        assert probe() is True, slots
    stand_in["raw"] = {"/slots": b'[{"id": 0, "speculative": false}, "junk", 7]'}
    assert probe() is False


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
    # Per-request drafting is the default where the server honours it: no setting is written.
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
    # That answer drafted nothing, as asked: the third request is measured, not given up on.
    assert chosen[2].reason == "after a read: drafting on, measuring acceptance"
    assert "speculative.n_max" not in bodies[2]
    assert isinstance(events[-1], TurnFinished) and events[-1].final_text == "done"


async def test_speculation_server_sends_every_request_with_the_servers_settings(la_env, monkeypatch) -> None:
    from agent.events import SpeculationChosen
    from localagent.agent_setup import AgentOptions, build_agent
    from localagent.context import AppContext
    from tests.support.scripted_model import ScriptedModelServer, ScriptedTurn

    monkeypatch.setattr("server.speculation_probe.honours_request_limits", _honours)
    la_env.write_config('[agent]\nspeculation = "server"\n')
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
