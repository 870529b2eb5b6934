"""The TUI's pure parts: slash commands, number formatting, the live metrics model, Markdown
block splitting and code blocks, garbage-collection pacing, the command line, and the rule that
the core never imports the TUI."""

from __future__ import annotations

import ast
import gc
from pathlib import Path

import pytest
from rich.console import Console
from rich.markdown import Markdown

from agent.events import Metrics
from localagent.cli import build_parser
from localagent.tui_command import agent_options
from server.supervisor import ServerState, SupervisorStatus
from server.telemetry import MetricsSnapshot, ServerInfo, ServerStats
from tui import commands, formatting, gc_pacing, input_priority
from tui.markdown_blocks import block_cuts, split_blocks
from tui.metrics_model import LiveMetrics
from tui.widgets.streamed_markdown import rich_markdown

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
    snapshot = MetricsSnapshot(
        draft_tokens_total=100.0, accepted_tokens_total=60.0, drafts_total=25.0, accepted_per_position=(20.0, 15.0)
    )
    live.apply_stats(ServerStats(reachable=True, metrics=snapshot))
    assert live.server_state == "ready"
    assert live.mean_accepted_length == pytest.approx(1 + 60 / 25)
    assert live.acceptance_by_position == pytest.approx((0.8, 0.6))


def test_markdown_is_cut_into_blocks_only_after_a_blank_line_outside_code_fences():
    text = "para one\n\n```\n" + "code\n\n" * 3 + "```\n\n- a\n- b\n\n  still b\n\n~~~\n```\n\n~~~\n\nafter"
    finished, tail = split_blocks(text)
    assert finished == [
        "para one\n\n",
        "```\n" + "code\n\n" * 3 + "```\n\n",
        "- a\n- b\n\n  still b\n\n",  # an indented line after a blank one continues the list
        "~~~\n```\n\n~~~\n\n",  # a ``` inside a ~~~ fence does not close it
    ]
    assert tail == "after" and "".join(finished) + tail == text
    # A block is finished only once the next one has begun: text up to a blank line stays open.
    assert split_blocks("para\n\n") == ([], "para\n\n")
    assert split_blocks("\n\nlead") == ([], "\n\nlead")
    assert block_cuts("a\n\n  b") == [] and block_cuts("a\n\nb") == [3]


def test_blocks_cut_anywhere_in_a_stream_join_back_and_render_as_the_whole():
    text = "# Title\n\nSome **bold** text.\n\n1. one\n2. two\n\n```py\nx = 1\n\ny = 2\n```\n\nEnd.\n"
    for step in (1, 3, 7):
        finished: list[str] = []
        tail = ""
        for index in range(0, len(text), step):
            done, tail = split_blocks(tail + text[index : index + step])
            finished.extend(done)
        assert "".join(finished) + tail == text
        assert [block.split("\n")[0] for block in finished] == ["# Title", "Some **bold** text.", "1. one", "```py"]


def test_code_blocks_are_drawn_as_rich_draws_them():
    console = Console(width=60, force_terminal=True, color_system="truecolor")
    cases = [
        "```python\ndef total(values):\n\tresult = 0.0\n    return result\n```",
        "```\nplain\n\n  indented\n```",
        "```no-such-language\nabc\n```",
        "    indented code\n    more",
        "- item\n\n  ```bash\n  ls -la | grep x  # comment\n  ```",
    ]
    for markdown in cases:
        ours = console.render_lines(rich_markdown(markdown), console.options, pad=True)
        rich = console.render_lines(
            Markdown(markdown, code_theme="monokai", hyperlinks=False), console.options, pad=True
        )
        assert ours == rich, markdown
    # A line wider than the block is folded at the edge, nothing lost.
    long = "```python\nx = '" + "y" * 100 + "'\n```"
    lines = [
        "".join(segment.text for segment in line) for line in console.render_lines(rich_markdown(long), console.options)
    ]
    assert (
        all(len(line) == 60 for line in lines) and "".join(line.strip() for line in lines) == "x = '" + "y" * 100 + "'"
    )


def test_session_totals_count_the_running_turn_live_and_end_on_the_agents_count():
    live = LiveMetrics()
    live.set_totals({"prompt_tokens": 1000, "completion_tokens": 50, "tool_calls": 0})
    live.turn_started(0.0)
    live.record(metrics(10), 0.1)  # cumulative within one request: 100 read + 900 cached
    live.record(metrics(30), 0.2)
    assert (live.session_prompt_tokens, live.session_completion_tokens) == (2000, 80)
    live.request_finished()  # folded once, however many Metrics the request had
    live.request_finished()
    assert (live.session_prompt_tokens, live.session_completion_tokens) == (2000, 80)
    live.request_started(0.3)
    live.record(metrics(5), 0.4)
    assert (live.session_prompt_tokens, live.session_completion_tokens) == (3000, 85)
    # The agent's totals replace the estimate: nothing is added on top of them.
    live.turn_finished({"prompt_tokens": 3000, "completion_tokens": 85, "tool_calls": 1})
    assert (live.session_prompt_tokens, live.session_completion_tokens, live.tool_calls) == (3000, 85, 1)
    live.record(metrics(7), 0.5)  # a straggler after the turn (or a test) changes no total
    assert (live.session_prompt_tokens, live.session_completion_tokens) == (3000, 85)


def test_streamed_output_waits_only_while_a_key_is_on_its_way():
    input_priority.key_shown()
    assert input_priority.hold_remaining() == 0
    input_priority.key_arrived()
    input_priority.key_arrived()
    assert 0 < input_priority.hold_remaining() <= input_priority.MAX_HOLD_S
    input_priority.key_shown()
    assert input_priority.hold_remaining() > 0  # the second key is not drawn yet
    input_priority.key_shown()
    assert input_priority.hold_remaining() == 0


def test_full_collections_wait_for_the_turn_and_the_pause_after_it():
    before = gc.get_threshold()
    try:
        with gc_pacing.full_collections_deferred():
            assert gc.get_threshold()[:2] == before[:2] and gc.get_threshold()[2] > 10**6
            assert not gc_pacing.catch_up()  # a turn is running
        assert gc_pacing.deferring() and gc.get_threshold()[2] > 10**6  # still, until the pause
        assert gc_pacing.catch_up()
        assert not gc_pacing.deferring() and gc.get_threshold() == before
    finally:
        gc_pacing.restore()
        gc.set_threshold(*before)


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
        Metrics(
            predicted_n=1,
            predicted_per_second=10.0,
            prompt_n=2048,
            cache_n=0,
            prompt_per_second=900.0,
            draft_n=None,
            draft_n_accepted=None,
            context_used=2049,
            n_ctx=8192,
        ),
        1.0,
    )
    assert model.prompt_progress is None and model.waiting_since is None


def test_a_slots_list_holding_anything_but_objects_is_read_without_a_crash() -> None:
    """/slots from whatever answers at the address: the telemetry poller and the speculation probe
    both read it through ServerInfo, and a list with junk in it used to raise AttributeError."""
    from server.telemetry import ServerInfo

    info = ServerInfo.from_json({}, [{"id": 0, "speculative": True, "is_processing": True}, "junk", 7, None])
    assert info.speculative is True and info.slots_processing == 1 and len(info.slots) == 1
    assert ServerInfo.from_json({}, ["junk"]).speculative is None
