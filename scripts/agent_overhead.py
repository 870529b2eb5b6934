"""The agent's own cost per tool round trip, against a scripted model that answers at once.

    python scripts/agent_overhead.py [--round-trips N]

Each round trip is one streamed request (HTTP, SSE parsing, event stream), one permission
decision, one `view` tool run, and appending the results to the session file and history.
The scripted server answers instantly, so the time measured is an upper bound on what
localagent adds around the model. Prints numbers; asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import statistics
import tempfile
import time
from pathlib import Path

from agent.events import ToolCallFinished, TurnFinished
from tests.support.scripted_model import ScriptedModelServer, ScriptedToolCall, ScriptedTurn


def serve(turns: list[ScriptedTurn], ready: multiprocessing.Queue, stop: multiprocessing.Event) -> None:
    # In its own process, so the scripted server's work does not share our GIL or get counted.
    with ScriptedModelServer(turns) as model:
        ready.put(model.base_url)
        stop.wait()


async def measure(round_trips: int) -> list[float]:
    import os

    with tempfile.TemporaryDirectory() as home, tempfile.TemporaryDirectory() as workspace:
        os.environ["LOCALAGENT_HOME"] = home
        Path(workspace, "small.py").write_text("def f():\n    return 1\n")
        from localagent.agent_setup import AgentOptions, build_agent
        from localagent.context import AppContext

        turns = [
            ScriptedTurn(tool_calls=[ScriptedToolCall("view", {"path": "small.py", "offset": 1 + i % 2})])
            for i in range(round_trips)
        ]
        turns.append(ScriptedTurn(text="done"))
        ready: multiprocessing.Queue = multiprocessing.Queue()
        stop = multiprocessing.Event()
        server = multiprocessing.Process(target=serve, args=(turns, ready, stop), daemon=True)
        server.start()
        base_url = ready.get(timeout=30)
        try:
            ctx = AppContext.load(Path(workspace))
            runtime = await build_agent(
                ctx, AgentOptions(base_url=base_url, mode="full-auto", max_steps=round_trips + 5, headless=True)
            )
            marks: list[float] = []
            try:
                last = time.perf_counter()
                async for event in runtime.agent.run_turn("look at small.py"):
                    if isinstance(event, ToolCallFinished):
                        now = time.perf_counter()
                        marks.append(now - last)
                        last = now
                    if isinstance(event, TurnFinished):
                        assert event.reason == "done", event
            finally:
                await runtime.close()
        finally:
            stop.set()
            server.join(10)
        return marks


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--round-trips", type=int, default=40)
    args = parser.parse_args()
    marks = asyncio.run(measure(args.round_trips))[1:]  # the first includes connection setup
    ms = [m * 1000 for m in marks]
    print(
        f"{len(ms)} tool round trips: median {statistics.median(ms):.1f} ms, "
        f"p90 {sorted(ms)[int(len(ms) * 0.9)]:.1f} ms, max {max(ms):.1f} ms "
        "(request + stream + permission + tool + session write, scripted model answering at once)"
    )


if __name__ == "__main__":
    main()
