"""Telemetry from vLLM and SGLang: their /metrics pages (composed from each engine's own metric
definitions, versions in the files' first lines) give the same MetricsSnapshot fields that
llama-server's do, and a poller on a fake of each engine sees drafts and acceptance."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from server.engines import SGLANG as SGLANG_ENGINE
from server.engines import VLLM as VLLM_ENGINE
from server.engines.metrics import detect_engine
from server.telemetry import TelemetryPoller, parse_metrics

FIXTURES = Path(__file__).parent / "fixtures" / "engine_metrics"
VLLM, SGLANG = VLLM_ENGINE.key, SGLANG_ENGINE.key
VLLM_PAGE = (FIXTURES / "vllm-0.33.0.txt").read_text()
SGLANG_PAGE = (FIXTURES / "sglang-0.5.23.txt").read_text()


def test_a_vllm_page_gives_tokens_drafts_acceptance_by_position_and_prefix_cache() -> None:
    m = parse_metrics(VLLM_PAGE)
    assert m.engine == VLLM
    assert (m.tokens_predicted_total, m.draft_tokens_total, m.accepted_tokens_total, m.drafts_total) == (
        2560.0,
        4396.0,
        1927.0,
        628.0,
    )
    assert m.acceptance == pytest.approx(1927 / 4396)
    assert m.mean_accepted_length == pytest.approx(1 + 1927 / 628)
    assert m.accepted_per_position[:3] == (515.0, 414.0, 327.0)
    assert m.acceptance_by_position[0] == pytest.approx(515 / 628)
    assert m.prefix_cache_hit_rate is not None and 0 < m.prefix_cache_hit_rate < 1
    assert m.requests_processing == 1.0


def test_an_sglang_page_gives_its_own_averages_where_it_has_no_draft_counters() -> None:
    m = parse_metrics(SGLANG_PAGE)
    assert m.engine == SGLANG
    assert m.tokens_predicted_total == 2048.0 and m.draft_tokens_total is None
    assert m.drafted and m.acceptance == pytest.approx(0.2807) and m.mean_accepted_length == pytest.approx(5.21)
    assert m.predicted_tokens_seconds == pytest.approx(412.7)
    assert m.prefix_cache_hit_rate == pytest.approx(4096 / (4096 + 1919))


def test_samples_of_one_name_are_summed_across_engines_and_rates_averaged_across_ranks() -> None:
    page = "\n".join(
        [
            "# TYPE vllm:generation_tokens_total counter",
            'vllm:generation_tokens_total{engine="0",model_name="m"} 10',
            'vllm:generation_tokens_total{engine="1",model_name="m"} 5',
            "",
        ]
    )
    assert parse_metrics(page).tokens_predicted_total == 15.0
    ranks = "\n".join(
        [
            "# TYPE sglang:gen_throughput gauge",
            'sglang:gen_throughput{tp_rank="0"} 100',
            'sglang:gen_throughput{tp_rank="1"} 300',
            "",
            "# TYPE sglang:spec_accept_length gauge",
            'sglang:spec_accept_length{tp_rank="0"} 0',
            'sglang:spec_accept_length{tp_rank="1"} 0',
            "",
        ]
    )
    sglang = parse_metrics(ranks)
    assert sglang.predicted_tokens_seconds == 200.0
    # Without speculation SGLang still prints its spec gauges, at zero: nothing was drafted.
    assert not sglang.drafted and sglang.acceptance is None


def test_detection_and_counter_differences() -> None:
    assert detect_engine(["vllm:a", "vllm:b", "python_gc"]) == VLLM
    assert detect_engine(["process_cpu_seconds_total"]) is None
    later = VLLM_PAGE.replace("vllm:prefix_cache_hits_total{", 'vllm:prefix_cache_hits_total{x="1",', 1)
    now, before = parse_metrics(later), parse_metrics(VLLM_PAGE)
    assert now.since(before).prefix_cache_hits_total == 0.0


class _FakeEngine(BaseHTTPRequestHandler):
    page = ""

    def do_GET(self) -> None:
        if self.path == "/metrics":
            body, status = self.page.encode(), 200
        else:  # neither engine has llama-server's /props or /slots
            body, status = b'{"detail":"Not Found"}', 404
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        return None


@pytest.mark.parametrize(("page", "acceptance"), [(VLLM_PAGE, 1927 / 4396), (SGLANG_PAGE, 0.2807)])
async def test_the_poller_shows_acceptance_from_a_fake_of_each_engine(page: str, acceptance: float) -> None:
    handler = type("Engine", (_FakeEngine,), {"page": page})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        poller = TelemetryPoller(f"http://127.0.0.1:{httpd.server_port}")
        stats = await poller.poll_once()
    finally:
        httpd.shutdown()
    assert stats.reachable and stats.speculative
    assert stats.metrics is not None and stats.metrics.acceptance == pytest.approx(acceptance)
