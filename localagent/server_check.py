"""`localagent server check`: prove in seconds that this binary runs a profile and drafts."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import httpx2

from server.http import auth_headers
from server.manager import ServerManager
from server.telemetry import MetricsSnapshot, RequestTimings, parse_metrics

CHECK_PROMPT = "Write a Python function that reverses a string, then call it on 'hello'."


@dataclass
class CheckReport:
    profile: str
    binary: str
    command: str
    speculative: str
    ready_s: float = 0.0
    timings: RequestTimings | None = None
    metrics: MetricsSnapshot | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        if self.timings is None or self.timings.predicted_n == 0:
            return False
        return self.speculative == "none" or self.timings.drafted

    @property
    def verdict(self) -> str:
        if self.timings is None or self.timings.predicted_n == 0:
            return f"profile {self.profile} started but generated nothing"
        if self.speculative != "none" and not self.timings.drafted:
            return (
                f"profile {self.profile} asks for {self.speculative} speculation but the server drafted "
                "nothing (no draft_n in its timings): this build does not speculate with these flags"
            )
        return f"ok: {self.profile} serves" + (" and drafts" if self.speculative != "none" else "")

    def lines(self) -> list[str]:
        lines = [f"binary:   {self.binary}", f"command:  {self.command}", *self.notes]
        lines.append(f"ready in: {self.ready_s:.1f} s")
        t = self.timings
        if t is not None:
            lines.append(
                f"generated {t.predicted_n} tokens at {t.predicted_per_second or 0:.1f} tok/s "
                f"(prompt {t.prompt_n} tokens at {t.prompt_per_second or 0:.1f} tok/s)"
            )
            if t.draft_n is None:
                lines.append("drafting: nothing drafted")
            else:
                acceptance = f"{t.acceptance:.0%}" if t.acceptance is not None else "-"
                lines.append(f"drafting: {t.draft_n} drafted, {t.draft_n_accepted} accepted ({acceptance})")
        m = self.metrics
        if m is not None and m.mean_accepted_length is not None:
            by_position = " ".join(f"{rate:.0%}" for rate in m.acceptance_by_position[:16])
            lines.append(f"mean accepted length: {m.mean_accepted_length:.2f}; by position: {by_position}")
        lines.append(self.verdict)
        return lines


async def run_check(manager: ServerManager, profile_name: str, max_tokens: int = 64) -> CheckReport:
    profile, plan, _models = manager.plan(profile_name, port=None)
    report = CheckReport(
        profile=profile_name,
        binary=plan.argv[0],
        command=plan.shell(),
        speculative=profile.speculative.type,
        notes=list(plan.notes),
    )
    started = time.monotonic()
    handle = await manager.start_in_process(profile_name, port="auto")
    report.ready_s = time.monotonic() - started
    report.command = handle.supervisor.plan.shell() if handle.supervisor else report.command
    try:
        async with httpx2.AsyncClient(timeout=httpx2.Timeout(10.0, read=300.0)) as client:
            response = await client.post(
                f"{handle.base_url}/v1/chat/completions",
                json={
                    "messages": [{"role": "user", "content": CHECK_PROMPT}],
                    "max_tokens": max_tokens,
                    "temperature": 0.0,
                    "seed": 42,
                },
                headers=auth_headers(manager.api_key),
            )
            response.raise_for_status()
            report.timings = RequestTimings.from_json(response.json().get("timings"))
            metrics = await client.get(f"{handle.base_url}/metrics")
            if metrics.status_code == 200:
                report.metrics = parse_metrics(metrics.text)
    finally:
        await handle.close()
    return report
