"""The patch on our llama.cpp (server/patches/0001): a request's speculative.n_max bounds the
drafting of that request, for ngram-mod (tiny) and DFlash (tiny-dflash), on the real server, as
the agent sends it (chat completions); the probe sees it; p_min reaches the DFlash drafter."""

from __future__ import annotations

import asyncio
import json

import httpx2
import pytest

from server.speculation_probe import honours_request_limits

pytestmark = pytest.mark.server

# Repetition the n-gram drafter finds, and greedy sampling so that it keeps finding it.
REPEATING = "one two three four five six seven eight. " * 12


def started(la_env, profile: str) -> str:
    result = la_env.run("server", "start", profile, "--port", "auto", timeout=300)
    assert result.code == 0, result.stderr
    [record] = la_env.status()
    return f"http://127.0.0.1:{record['port']}"


def drafting(url: str, n_max: int | None = None, p_min: float | None = None) -> tuple[int, int]:
    """(drafted tokens, drafting steps) of one greedy answer, from the server's own counters."""
    body: dict = {
        "messages": [{"role": "user", "content": f"Repeat this: {REPEATING}"}],
        "max_tokens": 48,
        "temperature": 0,
        "cache_prompt": False,
    }
    if n_max is not None:
        body["speculative.n_max"] = n_max
    if p_min is not None:
        body["speculative.p_min"] = p_min
    before = counters(url)
    answer = httpx2.post(f"{url}/v1/chat/completions", json=body, timeout=300)
    assert answer.status_code == 200, answer.text
    after = counters(url)
    drafted = int(after["spec_decode_num_draft_tokens_total"] - before["spec_decode_num_draft_tokens_total"])
    steps = int(after["spec_decode_num_drafts_total"] - before["spec_decode_num_drafts_total"])
    assert (answer.json().get("timings", {}).get("draft_n") or 0) == drafted
    return drafted, steps


def counters(url: str) -> dict[str, float]:
    text = httpx2.get(f"{url}/metrics", timeout=30).text
    values = {}
    for line in text.splitlines():
        if line.startswith("llamacpp:spec_decode"):
            name, value = line.split()
            values[name.removeprefix("llamacpp:")] = float(value)
    return values


@pytest.mark.parametrize("profile", ["tiny", "tiny-dflash"])
def test_a_requests_n_max_bounds_its_drafting(la_env, llama_server_binary, profile: str) -> None:
    url = started(la_env, profile)
    try:
        free_drafted, free_steps = drafting(url)
        assert free_drafted > 0, "the server drafts nothing on this prompt"
        assert drafting(url, n_max=0) == (0, 0)
        bounded, steps = drafting(url, n_max=2)
        assert bounded > 0 and bounded <= 2 * steps
        # Unbounded, the drafter drafts more per step than the bound lets it.
        assert free_drafted / free_steps > 2
        assert asyncio.run(honours_request_limits(url)) is True
        refused = httpx2.post(
            f"{url}/v1/chat/completions",
            json={"messages": [{"role": "user", "content": "x"}], "max_tokens": 2, "speculative.n_max": -5},
            timeout=60,
        )
        assert refused.status_code == 400 and "speculative.n_max" in json.dumps(refused.json())
    finally:
        la_env.run("server", "stop")


def test_a_requests_p_min_reaches_the_dflash_drafter(la_env, llama_server_binary) -> None:
    # The echo draft is certain of every token; a draft with random weights is not, so a minimum
    # probability cuts its drafts short.
    la_env.write_config(
        '[profiles.unsure]\nextends = "tiny-dflash"\n'
        'speculative = { type = "dflash", draft_model = { generated = "tiny-dflash-draft-random" }, draft_threads = 1 }\n'
    )
    url = started(la_env, "unsure")
    try:
        free, _ = drafting(url)
        strict, _ = drafting(url, p_min=0.9)
        assert strict < free / 2, (strict, free)
    finally:
        la_env.run("server", "stop")
