"""The TUI's pure parts: slash commands, number formatting, the live metrics model, Markdown
segmenting, the command line, and the rule that the core never imports the TUI."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from agent.events import Metrics
from localagent.cli import build_parser
from localagent.tui_command import agent_options
from server.supervisor import ServerState, SupervisorStatus
from server.telemetry import MetricsSnapshot, ServerInfo, ServerStats
from tui import commands, formatting
from tui.metrics_model import LiveMetrics
from tui.widgets.assistant_message import fences_balanced, segment_cuts

ROOT = Path(__file__).resolve().parents[1]


def metrics(predicted: int, drafted: int | None = None, accepted: int | None = None, tps: float = 50.0) -> Metrics:
    return Metrics(predicted, tps, 100, 900, 2000.0, drafted, accepted, 1000 + predicted, 8192)


def test_slash_commands_parse():
    assert commands.parse("hello /undo") is None
    assert commands.parse("  /undo ") == commands.SlashCommand("undo")
    assert commands.parse("/server restart") == commands.SlashCommand("server", ("restart",))
    assert commands.parse("/") == commands.SlashCommand("help")
    assert commands.parse("//etc/passwd is a path") is None
    assert commands.unescape("//etc/passwd is a path") == "/etc/passwd is a path"
    assert not commands.SlashCommand("frobnicate").known
    text = commands.help_text()
    for name in ("undo", "diff", "clear", "compact", "mode", "mcp", "server", "help", "quit"):
        assert f"/{name}" in text


def test_formatting_never_shows_a_misleading_zero():
    assert formatting.rate(None) == formatting.percent(None) == formatting.DASH
    assert formatting.rate(1234.56) == "1,234.6"
    assert formatting.percent(0.6667) == "66.7 %"
    assert formatting.duration(0.12) == "120 ms"
    assert formatting.duration(1.5) == "1.50 s"
    assert formatting.duration(125) == "2m 05s"
    assert formatting.bar(0.5, 4) == "██  "
    assert len(formatting.bar(0.33, 10)) == 10


def test_acceptance_is_none_until_something_is_drafted():
    live = LiveMetrics()
    live.turn_started(0.0)
    live.record(metrics(10), 0.1)
    assert live.acceptance is None and live.acceptance_note is not None
    live.apply_stats(ServerStats(info=ServerInfo(speculative=False)))
    assert live.acceptance_note == "off on this server"


def test_drafts_add_up_over_the_requests_of_a_turn():
    live = LiveMetrics()
    live.turn_started(0.0)
    live.record(metrics(10, 8, 6), 0.1)
    live.record(metrics(20, 16, 12), 0.2)  # cumulative within one request
    live.request_finished()
    assert (live.drafted, live.accepted) == (16, 12)
    live.request_started(0.3)
    assert live.waiting_since == 0.3
    live.record(metrics(5, 4, 1), 0.4)
    assert live.waiting_since is None
    assert (live.drafted, live.accepted) == (20, 13)
    assert live.acceptance == pytest.approx(13 / 20)
    live.turn_finished({"prompt_tokens": 7, "completion_tokens": 3, "tool_calls": 1})
    assert (live.drafted, live.accepted, live.tool_calls) == (20, 13, 1)
    live.turn_started(1.0)
    assert live.acceptance is None and not live.samples


def test_sparkline_samples_are_rate_limited():
    live = LiveMetrics()
    live.turn_started(0.0)
    for step in range(100):
        live.record(metrics(step), step * 0.01)  # 100 chunks in one second
    assert len(live.samples) == 10


def test_server_state_comes_from_the_supervisor_or_from_reachability():
    live = LiveMetrics()
    live.apply_status(SupervisorStatus(ServerState.RESTARTING, pid=None, restarts=2))
    assert (live.server_state, live.restarts) == ("restarting", 2)
    live.managed = False
    live.apply_stats(ServerStats(reachable=False))
    assert live.server_state == "down"
    snapshot = MetricsSnapshot(draft_tokens_total=100.0, accepted_tokens_total=60.0, drafts_total=25.0,
                               accepted_per_position=(20.0, 15.0))
    live.apply_stats(ServerStats(reachable=True, metrics=snapshot))
    assert live.server_state == "ready"
    assert live.mean_accepted_length == pytest.approx(1 + 60 / 25)
    assert live.acceptance_by_position == pytest.approx((0.8, 0.6))


def test_markdown_is_cut_only_after_a_blank_line_outside_code_fences():
    text = "a" * 10 + "\n\n```\n" + "code\n\n" * 5 + "```\n\nafter\n\nmore"
    cuts = segment_cuts(text, size=13)  # the first blank line past 13 characters is inside the fence
    for cut in cuts:
        assert text[cut - 2 : cut] == "\n\n" and fences_balanced(text[:cut])
    assert cuts and text[cuts[0]:].startswith("after")
    assert segment_cuts("short\n\ntext", size=100) == []
    pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)])]
    assert "".join(pieces) == text


def test_top_level_flags_open_the_tui_and_leave_run_alone():
    parser = build_parser()
    args = parser.parse_args(["--profile", "tiny", "--mode", "auto-edit", "--resume", "last"])
    assert args.command is None and getattr(args, "handler", None) is None
    options = agent_options(args)
    assert (options.profile, options.mode, options.resume, options.headless) == ("tiny", "auto-edit", "last", False)
    args = parser.parse_args(["--base-url", "http://127.0.0.1:8080/v1"])
    assert agent_options(args).base_url == "http://127.0.0.1:8080/v1"
    with pytest.raises(SystemExit):
        parser.parse_args(["--profile", "tiny", "--base-url", "http://x/v1"])
    run = parser.parse_args(["run", "task.md", "--profile", "tiny"])
    assert run.profile == "tiny" and run.tui_profile is None


def test_an_unknown_profile_fails_before_the_screen_opens(la_env):
    result = la_env.run("--profile", "no-such-profile", timeout=60)
    assert result.code == 2 and "unknown profile" in result.stderr
    assert "Traceback" not in result.stderr


def test_the_core_never_imports_the_tui():
    offenders = []
    for package in ("agent", "server"):
        for path in (ROOT / package).rglob("*.py"):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                names = []
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.module:
                    names = [node.module]
                offenders += [f"{path.relative_to(ROOT)}: {n}" for n in names if n.split(".")[0] in ("textual", "tui")]
    assert offenders == []


def test_metrics_model_shows_real_prompt_progress_until_the_first_token():
    from agent.events import Metrics
    from tui.metrics_model import LiveMetrics

    model = LiveMetrics()
    model.request_started(0.0)
    model.reading(512, 2048, 0.5)
    assert model.prompt_progress == (512, 2048) and model.waiting_since == 0.0
    model.record(
        Metrics(predicted_n=1, predicted_per_second=10.0, prompt_n=2048, cache_n=0, prompt_per_second=900.0,
                draft_n=None, draft_n_accepted=None, context_used=2049, n_ctx=8192),
        1.0,
    )
    assert model.prompt_progress is None and model.waiting_since is None
