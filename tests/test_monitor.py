"""`localagent monitor`: a server's traffic read from /slots and /metrics alone, shown live while
another client's request streams (the real tiny server, driven by Textual's Pilot)."""

from __future__ import annotations

import asyncio
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx2
import pytest

from server.telemetry import MetricsSnapshot, ServerInfo, ServerStats, SlotView
from server.traffic import RequestProgress, RequestsFinished, RequestStarted, TrafficTracker


def _stats(slot: SlotView | None, metrics: MetricsSnapshot) -> ServerStats:
    return ServerStats(info=ServerInfo(slots=(slot,) if slot else ()), metrics=metrics)


def _slot(task: int | None, processing: bool, n_prompt: int = 0, decoded: int = 0, cache: int = 0) -> SlotView:
    return SlotView(0, 8192, processing, task, n_prompt, n_prompt - decoded if processing else 0, cache, decoded)


def test_a_request_is_seen_starting_generating_and_finishing_from_the_counters() -> None:
    tracker = TrafficTracker()
    before = MetricsSnapshot(prompt_tokens_total=100, tokens_predicted_total=50, tokens_predicted_seconds_total=1.0)
    assert tracker.observe(_stats(_slot(1, False), before), 0.0) == []
    changes = tracker.observe(_stats(_slot(2, True, n_prompt=4000, decoded=0, cache=3000), before), 1.0)
    assert isinstance(changes[0], RequestStarted) and isinstance(changes[1], RequestProgress)
    tracker.observe(_stats(_slot(2, True, n_prompt=4010, decoded=10, cache=3000), before), 2.0)
    [progress] = tracker.observe(_stats(_slot(2, True, n_prompt=4030, decoded=30, cache=3000), before), 2.5)
    assert isinstance(progress, RequestProgress)
    assert progress.tokens_per_second == 40.0 and progress.prompt_tokens == 4000 and progress.context_used == 4030
    after = MetricsSnapshot(
        prompt_tokens_total=1100,
        prompt_tokens_cached_total=3000,
        prompt_seconds_total=2.0,
        tokens_predicted_total=80,
        tokens_predicted_seconds_total=1.6,
        draft_tokens_total=20,
        accepted_tokens_total=15,
    )
    [finished] = tracker.observe(_stats(_slot(2, False), after), 3.0)
    assert isinstance(finished, RequestsFinished)
    assert (finished.prompt_tokens, finished.cached_tokens, finished.generated_tokens) == (1000, 3000, 30)
    assert (
        finished.generation_per_second == pytest.approx(50.0)
        and finished.acceptance == 0.75
        and finished.context_used == 4030
    )
    assert tracker.observe(_stats(_slot(2, False), after), 4.0) == []  # counted once


def test_a_request_that_started_and_ended_between_two_polls_is_still_counted() -> None:
    tracker = TrafficTracker()
    tracker.observe(_stats(_slot(None, False), MetricsSnapshot()), 0.0)
    later = MetricsSnapshot(prompt_tokens_total=31, tokens_predicted_total=12, tokens_predicted_seconds_total=0.2)
    [finished] = tracker.observe(_stats(_slot(7, False), later), 1.0)
    assert isinstance(finished, RequestsFinished) and finished.generated_tokens == 12


def test_a_restart_counts_what_the_new_counters_hold_never_a_negative_row() -> None:
    tracker = TrafficTracker()
    idle = _slot(None, False)
    tracker.observe(_stats(idle, MetricsSnapshot(prompt_tokens_total=1000, tokens_predicted_total=500)), 0.0)
    after_restart = MetricsSnapshot(
        prompt_tokens_total=40, tokens_predicted_total=10, tokens_predicted_seconds_total=0.5
    )
    [finished] = tracker.observe(_stats(idle, after_restart), 1.0)
    assert isinstance(finished, RequestsFinished)
    assert (finished.prompt_tokens, finished.generated_tokens) == (40, 10)


def test_a_server_busy_by_its_counters_alone_is_not_idle() -> None:
    # vLLM and SGLang have no /slots, and llama-server's /metrics may be read while /slots was
    # read idle: requests_processing holds the row back until the request has ended.
    tracker = TrafficTracker()
    tracker.observe(_stats(None, MetricsSnapshot()), 0.0)
    for step in range(1, 5):
        running = MetricsSnapshot(prompt_tokens_total=100, tokens_predicted_total=step * 10, requests_processing=1)
        assert tracker.observe(_stats(None, running), float(step)) == []
    done = MetricsSnapshot(prompt_tokens_total=100, tokens_predicted_total=50, requests_processing=0)
    [finished] = tracker.observe(_stats(None, done), 6.0)
    assert isinstance(finished, RequestsFinished) and finished.generated_tokens == 50 and finished.requests == 1


async def test_while_a_prompt_is_read_the_panel_says_how_much_so_far_and_no_total() -> None:
    from textual.app import App

    from tui.monitor.traffic_panel import TrafficPanel

    class Host(App[None]):
        def compose(self):
            yield TrafficPanel(id="panel")

    async with Host().run_test() as pilot:
        panel = pilot.app.query_one(TrafficPanel)
        panel.apply_change(RequestStarted(0), now=0.0)
        reading = RequestProgress(0, 10_249, 0, 8_192, 0, None, 10_249, 32_768)
        panel.apply_change(reading, now=1.0)
        text = panel._prompt_text().plain
        assert "reading the prompt: 8,192 so far" in text and "10,249" not in text


def test_odd_numbers_in_slots_read_as_zero() -> None:
    slot = SlotView.from_json({"id": 0, "n_prompt_tokens": float("nan"), "next_token": [{"n_decoded": 1e400}]})
    assert (slot.n_prompt_tokens, slot.n_decoded) == (0, 0)


async def test_monitor_shows_another_clients_request_while_it_streams(la_env, llama_server_binary) -> None:
    from server.registry import Registry
    from tui.monitor.app import MonitorApp, MonitoredServer
    from tui.monitor.request_log import RequestLog
    from tui.monitor.traffic_panel import TrafficPanel

    started = la_env.run("server", "start", "tiny-baseline", "--port", "auto")
    assert started.code == 0, started.stderr
    [record] = la_env.status()
    registry = Registry(la_env.home / "state" / "servers")
    server = MonitoredServer(
        f"http://127.0.0.1:{record['port']}", "tiny-baseline", read_record=lambda: registry.read(record["port"])
    )
    usage: dict = {}

    def stream() -> None:
        # Another client: a plain streaming request the monitor never sees, only its effects.
        with httpx2.stream(
            "POST",
            f"{server.base_url}/v1/chat/completions",
            json={
                "messages": [{"role": "user", "content": "Tell a long story about a lighthouse keeper."}],
                "max_tokens": 160,
                "stream": True,
                "stream_options": {"include_usage": True},
                "temperature": 0,
                "ignore_eos": True,
            },
            timeout=120,
        ) as response:
            for line in response.iter_lines():
                if line.startswith("data: {"):
                    chunk = json.loads(line[6:])
                    usage.update(chunk.get("usage") or {})

    app = MonitorApp(server, poll_interval=0.2)
    async with app.run_test(size=(140, 40)) as pilot:
        panel = app.query_one(TrafficPanel)
        log = app.query_one(RequestLog)
        await pilot.pause(0.5)
        assert panel.model.server_state == "ready" and panel.model.server_pid == record["server_pid"]
        client = threading.Thread(target=stream)
        client.start()
        live_rates: list[float] = []
        while client.is_alive():
            await asyncio.sleep(0.1)
            if panel.model.request_open and panel.model.generation_tps:
                live_rates.append(panel.model.generation_tps)
        client.join()
        for _ in range(50):
            if log.row_count:
                break
            await pilot.pause(0.1)
        assert live_rates, "no live generation rate was shown while the request streamed"
        assert log.row_count == 1 and panel.finished == 1
        assert panel.generated == usage["completion_tokens"] == 160
        assert panel.prompt_read + panel.prompt_cached == usage["prompt_tokens"]
        assert panel.model.context_used >= usage["prompt_tokens"] + 150
        row = log.get_row_at(0)
        assert row[4] == "160"


class _PartialServer(BaseHTTPRequestHandler):
    """A llama-server seen from outside: with `wants_key`, only /health answers without a key;
    otherwise /props answers and /metrics is missing (started without --metrics)."""

    wants_key = False

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        if self.path == "/health":
            self._answer(200, b'{"status": "ok"}')
        elif self.wants_key:
            self._answer(401, b'{"error": "Invalid API Key"}')
        elif self.path in ("/props", "/slots"):
            self._answer(200, b'{"default_generation_settings": {"n_ctx": 4096}}' if self.path == "/props" else b"[]")
        else:
            self._answer(404, b"{}")

    def _answer(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.mark.parametrize("wants_key", [False, True])
async def test_monitor_says_why_an_outside_server_shows_nothing(wants_key: bool) -> None:
    from tui.monitor.app import MonitorApp, MonitoredServer

    handler = type("Handler", (_PartialServer,), {"wants_key": wants_key})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        app = MonitorApp(
            MonitoredServer(f"http://127.0.0.1:{server.server_address[1]}", "external server"), poll_interval=0.1
        )
        async with app.run_test(size=(140, 40)) as pilot:
            expected = "wants an API key" if wants_key else "start llama-server with --metrics"
            for _ in range(50):
                if expected in str(app.query_one("#requests-title").render()):
                    break
                await pilot.pause(0.1)
            assert expected in str(app.query_one("#requests-title").render())
    finally:
        server.shutdown()
        server.server_close()


def test_monitor_without_a_running_server_says_what_to_do(la_env) -> None:
    result = la_env.run("monitor")
    assert result.code == 2 and "no managed server is running" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    other = la_env.run("monitor", "9999")
    assert other.code == 2 and "no managed server on port 9999" in other.stderr
