"""Benchmark the TUI under a fast token stream (a measurement, not a test).

A synthetic agent streams Markdown into the real app, headless, at a fixed token rate (default
2,000 tokens/s for 10,000 tokens: one token per event, each with a Metrics event, as llama-server
sends them). Meanwhile a key is pressed every 100 ms into the prompt, as a terminal would send
it, and the time until the screen has been repainted with the changed prompt is recorded.
Reported:

- throughput: tokens per second from the first token to the whole answer shown, and how long the
  stream itself took (the app pulls events, so a slow app would stretch it past the ideal);
- key delay: median, p95 and worst time from a keypress to the repaint that shows it, and when
  the app had handled it (the text changed), before painting.

Goal: keep up with 2,000 tok/s with a median key delay under 50 ms.

    .venv/bin/python scripts/tui_bench.py [--rate 2000] [--tokens 10000] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from textual import events  # noqa: E402
from textual.message import Message  # noqa: E402
from textual.widgets import TextArea  # noqa: E402

from tests.synthetic_runtime import SyntheticAgent, SyntheticRuntime, factory_for  # noqa: E402
from tui.app import LocalAgentApp  # noqa: E402
from tui.widgets.assistant_message import AssistantMessage  # noqa: E402


# long: the key hook, the paint hook and the press loop share the timestamps they measure.
async def bench(rate: float, tokens: int, width: int, height: int, key_every: float) -> dict[str, float | int | bool]:
    agent = SyntheticAgent(tokens_per_second=rate, tokens=tokens)
    app = LocalAgentApp(factory_for(SyntheticRuntime(agent)), label="bench", telemetry=False)
    handled: list[float] = []
    painted: list[float] = []
    changed = asyncio.Event()
    changed_at = [0.0]

    def hook(message: Message) -> None:
        # The key's effect on the prompt: TextArea posts Changed right after inserting the text.
        if isinstance(message, TextArea.Changed):
            changed_at[0] = time.monotonic()
            changed.set()

    async with app.run_test(size=(width, height), message_hook=hook) as pilot:
        await pilot.pause()
        screen = app.chat
        paint = asyncio.Event()
        paint_at = [0.0]
        compositor_refresh = screen._compositor_refresh

        def refresh_and_note() -> None:
            compositor_refresh()
            paint_at[0] = time.monotonic()
            paint.set()

        screen._compositor_refresh = refresh_and_note  # type: ignore[method-assign]
        driver = app._driver
        assert driver is not None

        def press(key: str, character: str | None) -> None:
            # Straight to the driver, as a terminal would: pilot.press waits for the app to be
            # idle, which it is not while it streams.
            event = events.Key(key, character)
            event.set_sender(app)
            driver.send_message(event)

        for key, character in (("g", "g"), ("o", "o"), ("enter", None)):
            press(key, character)
        while agent.emitted == 0:
            await asyncio.sleep(0.005)
        while app.chat.turn_running:
            changed.clear()
            pressed = time.monotonic()
            press("x", "x")
            try:
                await asyncio.wait_for(changed.wait(), 5.0)
                while paint_at[0] < changed_at[0]:
                    paint.clear()
                    await asyncio.wait_for(paint.wait(), 5.0)
            except TimeoutError:
                break
            if app.chat.turn_running:
                handled.append(changed_at[0] - pressed)
                painted.append(paint_at[0] - pressed)
            await asyncio.sleep(max(0.0, key_every - (time.monotonic() - pressed)))
        await app.workers.wait_for_complete()
        # From the first token handed to the app to the whole answer shown (the turn's worker
        # ends after the last Markdown append has been made).
        finished = time.monotonic()
        started = agent.first_token_at or finished
        answers = app.chat.query(AssistantMessage)
        complete = bool(answers) and answers.last().source == answers.last().text != ""
    return _result(agent, rate, tokens, started, finished, complete, painted, handled)


def _ms(values: list[float], q: float) -> float:
    if not values:
        return -1.0
    ordered = sorted(values)
    return round(ordered[round(q * (len(ordered) - 1))] * 1000, 1)


def _result(
    agent: SyntheticAgent, rate: float, tokens: int, started: float, finished: float, complete: bool,
    painted: list[float], handled: list[float],
) -> dict[str, float | int | bool]:
    elapsed = finished - started
    return {
        "rate_target": rate,
        "tokens": tokens,
        "seconds": round(elapsed, 3),
        # How long the stream itself took: above the ideal when the app could not take tokens as
        # fast as they came (the producer is paced by the clock but pulled by the app).
        "stream_seconds": round((agent.last_token_at or finished) - started, 3),
        "ideal_seconds": round(tokens / rate, 3),
        "throughput_tok_s": round(tokens / elapsed, 1),
        "keeps_up": tokens / elapsed >= 0.95 * rate,
        "answer_complete": complete,
        "key_presses": len(painted),
        "key_delay_median_ms": _ms(painted, 0.5),
        "key_delay_p95_ms": _ms(painted, 0.95),
        "key_delay_max_ms": _ms(painted, 1.0),
        "key_handled_median_ms": _ms(handled, 0.5),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=2000.0, help="tokens per second to stream")
    parser.add_argument("--tokens", type=int, default=10_000)
    parser.add_argument("--size", default="140x44", help="terminal WIDTHxHEIGHT")
    parser.add_argument("--key-every", type=float, default=0.1, help="seconds between key presses")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    args = parser.parse_args()
    width, height = (int(x) for x in args.size.lower().split("x"))
    result = asyncio.run(bench(args.rate, args.tokens, width, height, args.key_every))
    if args.json:
        print(json.dumps(result))
        return
    print(f"streamed {result['tokens']} tokens at a target of {result['rate_target']:.0f} tok/s")
    print(f"app throughput: {result['throughput_tok_s']} tok/s over {result['seconds']} s "
          f"(ideal {result['ideal_seconds']} s) -> {'keeps up' if result['keeps_up'] else 'FALLS BEHIND'}")
    print(f"the stream took {result['stream_seconds']} s (not slowed by the app if about {result['ideal_seconds']} s); "
          f"answer fully shown: {result['answer_complete']}")
    print(f"key delay while streaming ({result['key_presses']} presses): median {result['key_delay_median_ms']} ms, "
          f"p95 {result['key_delay_p95_ms']} ms, worst {result['key_delay_max_ms']} ms "
          f"(to the repaint that shows it; handled after a median {result['key_handled_median_ms']} ms)")
    goal = result["keeps_up"] and 0 <= float(result["key_delay_median_ms"]) < 50
    print(f"goal (keep up, median key delay < 50 ms): {'met' if goal else 'NOT met'}")


if __name__ == "__main__":
    main()
