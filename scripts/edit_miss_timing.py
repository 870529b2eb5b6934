"""How long an edit takes to answer "not found" when old_string is a near miss.

    python scripts/edit_miss_timing.py [--repeats N]

For files of 416, 1,000 and 10,000 lines of Python-like code, an old_string copied from the
middle of the file (60 and 40 lines) with one typo is given to the `edit` tool, which then
searches for the closest real lines. Prints the tool's answer time and how long the event
loop went without running anything else meanwhile. Prints numbers; asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import statistics
import tempfile
import time
from pathlib import Path

from tools import EditTool, ToolContext, ViewTool

CASES = [(416, 60), (1_000, 40), (10_000, 40), (10_000, 60)]
TICK_SECONDS = 0.005


def python_like_source(line_count: int) -> str:
    """Functions that resemble each other, as real modules do, so near misses are plausible."""
    lines: list[str] = []
    number = 0
    while len(lines) < line_count:
        lines += [
            f"def handler_{number}(request, session, retries={number % 5}):",
            f'    """Handle request kind {number} and record the outcome."""',
            f"    payload = request.json().get('item_{number}', {{}})",
            "    if not payload:",
            f"        return error_response('missing item_{number}', status=400)",
            f"    for attempt in range(retries + {number % 3}):",
            f"        result = session.call('service_{number % 17}', payload, timeout={10 + number % 7})",
            "        if result.ok:",
            "            break",
            "    else:",
            f"        log.warning('handler_{number} gave up after %d attempts', retries)",
            f"    return success_response(result.value, tag='h{number}')",
            "",
        ]
        number += 1
    return "\n".join(lines[:line_count]) + "\n"


def near_miss(source: str, wanted_lines: int) -> tuple[str, int]:
    """A slice from the middle with one typo, and the 1-based line it was taken from."""
    lines = source.splitlines()
    start = len(lines) // 2 - wanted_lines // 2
    chosen = lines[start : start + wanted_lines]
    middle = len(chosen) // 2
    chosen[middle] = chosen[middle].replace("result", "resutl", 1) + "  "
    return "\n".join(chosen), start + 1


async def measure(line_count: int, wanted_lines: int, repeats: int) -> tuple[list[float], float, str]:
    """Answer times, the longest event-loop stall, and where the hint pointed vs. the true place."""
    with tempfile.TemporaryDirectory() as scratch:
        workspace = Path(scratch) / "ws"
        workspace.mkdir()
        source = python_like_source(line_count)
        (workspace / "module.py").write_text(source)
        ctx = ToolContext(workspace=workspace, scratch_dir=Path(scratch) / "scratch")
        await ViewTool().run({"path": "module.py"}, ctx)
        old_string, true_line = near_miss(source, wanted_lines)
        args = {"path": "module.py", "old_string": old_string, "new_string": "x"}
        durations: list[float] = []
        longest_gap = 0.0
        hint = ""
        for _ in range(repeats):
            stop = asyncio.Event()
            ticker = asyncio.create_task(_longest_loop_gap(stop))
            began = time.perf_counter()
            result = await EditTool().run(args, ctx)
            durations.append(time.perf_counter() - began)
            stop.set()
            longest_gap = max(longest_gap, await ticker)
            hint = _hint_summary(result.output, true_line)
        return durations, longest_gap, hint


def _hint_summary(output: str, true_line: int) -> str:
    alike = re.search(r"\((\d+)% alike\)", output)
    shown = re.search(r"^\s*(\d+)\t", output, re.MULTILINE)
    if not alike or not shown:
        return "no hint"
    return f"{alike.group(1)}% alike, from line {shown.group(1)} (copied from line {true_line})"


async def _longest_loop_gap(stop: asyncio.Event) -> float:
    longest = 0.0
    last = time.perf_counter()
    while not stop.is_set():
        await asyncio.sleep(TICK_SECONDS)
        now = time.perf_counter()
        longest = max(longest, now - last - TICK_SECONDS)
        last = now
    return longest


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    options = parser.parse_args()
    # The first miss in a process also loads numpy and rapidfuzz; measured apart from the rest.
    durations, _, _ = await measure(416, 60, 1)
    print(f"first miss in this process (loads numpy and rapidfuzz): {durations[0] * 1000:.1f} ms\n")
    print(f"{'file lines':>10} {'old_string':>10} {'median ms':>10} {'max ms':>8} {'loop gap ms':>12}  hint")
    for line_count, wanted_lines in CASES:
        durations, gap, hint = await measure(line_count, wanted_lines, options.repeats)
        print(
            f"{line_count:>10,} {wanted_lines:>10} {statistics.median(durations) * 1000:>10.1f} "
            f"{max(durations) * 1000:>8.1f} {gap * 1000:>12.1f}  {hint.strip()}"
        )


if __name__ == "__main__":
    asyncio.run(main())
