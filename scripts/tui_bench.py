"""Benchmark the TUI under a fast token stream (a measurement, not a test).

A synthetic agent streams Markdown into the real app, headless, at a fixed token rate (default
2,000 tokens/s for 10,000 tokens: one token per event, each with a Metrics event, as llama-server
sends them). Meanwhile a key is pressed every 100 ms into the prompt, as a terminal would send
it, and the time until the screen has been repainted with the changed prompt is recorded.
Reported:

- throughput: tokens per second from the first token to the whole answer shown, and how long the
  stream itself took (the app pulls events, so a slow app would stretch it past the ideal);
- key delay: median, p95 and worst time from a keypress to the first repaint that draws the
  prompt with the key in it, and when the app had handled it (the text changed), before painting;
- the machine's load: the 1-minute load average before and after the stream, the number of CPUs,
  and the share of one CPU the app itself used while streaming. ``--burn N`` runs N busy processes
  alongside, to measure on a loaded machine on purpose (with 2, a 2-core machine sits near 3).

Goal: keep up with 2,000 tok/s with a median key delay under 50 ms and a p95 under 100 ms.

    .venv/bin/python scripts/tui_bench.py [--rate 2000] [--tokens 10000] [--burn 0] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from textual import events
from textual.message import Message
from textual.widgets import TextArea

from tests.support.synthetic_runtime import SyntheticAgent, SyntheticRuntime, factory_for
from tui.app import LocalAgentApp
from tui.widgets.assistant_message import AssistantMessage
from tui.widgets.prompt_input import PromptInput


@dataclass
class Keys:
    """The keys typed into the prompt: when each was pressed, first in the prompt's text, first drawn.

    Only "x" is typed, so the n-th key is in once the prompt holds n characters."""

    pressed: list[float] = field(default_factory=list)
    changed: list[float] = field(default_factory=list)
    shown: list[float] = field(default_factory=list)

    @staticmethod
    def note(into: list[float], length: int, typed: int) -> None:
        now = time.monotonic()
        while len(into) < min(length, typed):
            into.append(now)


class Typist(threading.Thread):
    """Presses "x" every `every` seconds from its own thread, as a terminal's input arrives: at
    its own pace, whatever the event loop is doing (a key is not held back until the app is free)."""

    def __init__(self, press: Callable[[], None], keys: Keys, every: float) -> None:
        super().__init__(daemon=True)
        self.press, self.keys, self.every = press, keys, every
        self.stopped = threading.Event()

    def run(self) -> None:
        start = time.monotonic()
        while not self.stopped.is_set():
            due = start + len(self.keys.pressed) * self.every
            if self.stopped.wait(max(0.0, due - time.monotonic())):
                return
            # The time it was due: waking this thread may itself wait for the interpreter lock.
            self.keys.pressed.append(due)
            self.press()


# long: the key hook, the paint hook and the typist share the timestamps they measure.
async def bench(rate: float, tokens: int, width: int, height: int, key_every: float) -> dict[str, object]:
    agent = SyntheticAgent(tokens_per_second=rate, tokens=tokens)
    app = LocalAgentApp(factory_for(SyntheticRuntime(agent)), label="bench", telemetry=False)
    keys = Keys()
    prompt: list[PromptInput] = []

    def hook(message: Message) -> None:
        # TextArea posts Changed right after inserting the text.
        if isinstance(message, TextArea.Changed) and prompt:
            Keys.note(keys.changed, len(prompt[0].text), len(keys.pressed))

    async with app.run_test(size=(width, height), message_hook=hook) as pilot:
        await pilot.pause()
        screen = app.chat
        prompt.append(screen.prompt)
        compositor_refresh = screen._compositor_refresh

        def refresh_and_note() -> None:
            # A repaint draws the prompt when the prompt (or the whole screen) is among what it
            # repaints; it then shows the text the prompt holds at this moment.
            dirty = screen._dirty_widgets
            length = len(prompt[0].text) if prompt[0] in dirty or screen in dirty else 0
            compositor_refresh()
            Keys.note(keys.shown, length, len(keys.pressed))

        screen._compositor_refresh = refresh_and_note  # type: ignore[method-assign]  # timing a private Textual method
        driver = app._driver
        assert driver is not None

        def press(key: str = "x", character: str | None = "x") -> None:
            # Straight to the driver, as a terminal would: pilot.press waits for the app to be
            # idle, which it is not while it streams.
            event = events.Key(key, character)
            event.set_sender(app)
            driver.send_message(event)

        for key, character in (("g", "g"), ("o", "o"), ("enter", None)):
            press(key, character)
        while agent.emitted == 0:
            await asyncio.sleep(0.005)
        load_before = os.getloadavg()[0]
        cpu_before = time.process_time()
        typist = Typist(press, keys, key_every)
        typist.start()
        while app.chat.turn_running:
            await asyncio.sleep(0.05)
        typist.stopped.set()
        await app.workers.wait_for_complete()
        # From the first token handed to the app to the whole answer shown (the turn's worker
        # ends after the last Markdown append has been made).
        finished = time.monotonic()
        cpu = time.process_time() - cpu_before
        load_after = os.getloadavg()[0]
        typist.join()
        # Keys still on their way when the answer was complete are drawn once they arrive.
        await pilot.pause(0.2)
        started = agent.first_token_at or finished
        answers = app.chat.query(AssistantMessage)
        complete = bool(answers) and answers.last().source == answers.last().text != ""
    # Only the keys pressed while the answer streamed, and in time to be seen before the end.
    during = [i for i, at in enumerate(keys.pressed) if at <= (agent.last_token_at or finished)]
    painted = [keys.shown[i] - keys.pressed[i] for i in during if i < len(keys.shown)]
    handled = [keys.changed[i] - keys.pressed[i] for i in during if i < len(keys.changed)]
    result = _result(agent, rate, tokens, started, finished, complete, painted, handled)
    result.update(
        key_presses_unseen=len(during) - len(painted),
        cpus=os.cpu_count() or 1,
        load_1m_before=round(load_before, 2),
        load_1m_after=round(load_after, 2),
        app_cpu_share=round(cpu / max(finished - started, 1e-6), 2),
    )
    return result


def _ms(values: list[float], q: float) -> float:
    if not values:
        return -1.0
    ordered = sorted(values)
    return round(ordered[round(q * (len(ordered) - 1))] * 1000, 1)


def _result(
    agent: SyntheticAgent,
    rate: float,
    tokens: int,
    started: float,
    finished: float,
    complete: bool,
    painted: list[float],
    handled: list[float],
) -> dict[str, object]:
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


def _burn(stop_at: float) -> None:
    while time.monotonic() < stop_at:
        pass


@contextmanager
def background_load(processes: int, seconds: float) -> Iterator[None]:
    """`processes` busy loops for at most `seconds`, stopped when the block ends."""
    workers = [
        multiprocessing.Process(target=_burn, args=(time.monotonic() + seconds,), daemon=True) for _ in range(processes)
    ]
    for worker in workers:
        worker.start()
    try:
        yield
    finally:
        for worker in workers:
            worker.terminate()
            worker.join()


def report(result: dict[str, object]) -> None:
    print(f"streamed {result['tokens']} tokens at a target of {result['rate_target']:.0f} tok/s")
    print(
        f"app throughput: {result['throughput_tok_s']} tok/s over {result['seconds']} s "
        f"(ideal {result['ideal_seconds']} s) -> {'keeps up' if result['keeps_up'] else 'FALLS BEHIND'}"
    )
    print(
        f"the stream took {result['stream_seconds']} s (not slowed by the app if about {result['ideal_seconds']} s); "
        f"answer fully shown: {result['answer_complete']}"
    )
    print(
        f"key delay while streaming ({result['key_presses']} presses): median {result['key_delay_median_ms']} ms, "
        f"p95 {result['key_delay_p95_ms']} ms, worst {result['key_delay_max_ms']} ms "
        f"(to the repaint that shows it; handled after a median {result['key_handled_median_ms']} ms)"
    )
    print(
        f"load: 1-minute average {result['load_1m_before']} -> {result['load_1m_after']} on {result['cpus']} CPUs "
        f"({result['burn']} busy processes alongside); the app used {result['app_cpu_share']} of a CPU"
    )
    median, p95 = (
        float(str(result["key_delay_median_ms"])),
        float(str(result["key_delay_p95_ms"])),
    )
    goal = result["keeps_up"] and 0 <= median < 50 and 0 <= p95 < 100
    print(f"goal (keep up, median key delay < 50 ms, p95 < 100 ms): {'met' if goal else 'NOT met'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=2000.0, help="tokens per second to stream")
    parser.add_argument("--tokens", type=int, default=10_000)
    parser.add_argument("--size", default="140x44", help="terminal WIDTHxHEIGHT")
    parser.add_argument("--key-every", type=float, default=0.1, help="seconds between key presses")
    parser.add_argument("--burn", type=int, default=0, help="busy processes to run alongside (load)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    args = parser.parse_args()
    width, height = (int(x) for x in args.size.lower().split("x"))
    with background_load(args.burn, 10 * args.tokens / args.rate + 60):
        result = asyncio.run(bench(args.rate, args.tokens, width, height, args.key_every))
    result["burn"] = args.burn
    if args.json:
        print(json.dumps(result))
    else:
        report(result)


if __name__ == "__main__":
    main()
