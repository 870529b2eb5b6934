"""``localagent server plan``: the GPU memory a profile needs, against the card, before loading."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

from rich.markup import escape
from rich.table import Table

from localagent.console import err, out
from localagent.errors import UsageError
from server.engines import launched_engine

if TYPE_CHECKING:
    from localagent.context import AppContext
    from server.memory_plan import MemoryPlan


def show_plan(args: argparse.Namespace, ctx: AppContext) -> int:
    from server.memory_plan import GIB, gpu_memory_bytes, plan_memory
    from server.model_shapes import find_shape
    from server.profile_loading import get_profile

    if args.vram is not None and not 0 < args.vram <= 4096:
        raise UsageError(f"--vram {args.vram:g} is not a card's memory in GiB; e.g. --vram 24")
    profile = get_profile(ctx.profiles, ctx.profile_name(args.profile))
    if launched_engine(profile) is not None:
        raise UsageError(f"server plan reads GGUF models; profile {profile.name!r} runs on {profile.engine}")
    dirs = ctx.paths.server_dirs().model_dirs
    target = find_shape(profile.model, dirs)
    draft_model = profile.speculative.draft_model
    draft = find_shape(draft_model, dirs) if draft_model is not None else None
    vram: int | None
    if args.vram is not None:
        vram, vram_source = int(args.vram * GIB), "--vram"
    else:
        vram, vram_source = gpu_memory_bytes()
    plan = plan_memory(profile, target.shape, draft.shape if draft else None, vram, vram_source)
    notes = [found.note for found in (target, draft) if found is not None and found.note]
    if args.json:
        out.print_json(json.dumps(_plan_json(plan, notes)))
        return 0
    table = Table("", "GiB", "", title=f"{profile.name}: context {plan.n_ctx}", title_justify="left")
    for line in plan.lines:
        table.add_row(line.what, f"{line.bytes / GIB:.2f}", escape(line.note))
    table.add_row("total", f"{plan.total / GIB:.2f}", "", style="bold")
    out.print(table)
    if plan.vram is None or plan.budget is None:
        out.print(f"the card's memory is unknown: {vram_source}")
    else:
        verdict = "fits" if plan.fits else "does not fit"
        out.print(
            f"{verdict}: {plan.total / GIB:.2f} GiB of {plan.budget / GIB:.2f} GiB usable on "
            f"{escape(plan.vram_source)} ({plan.vram / GIB:.2f} GiB less the 1 GiB llama.cpp's --fit keeps free)"
        )
        if plan.largest_ctx is None:
            out.print("not even a 256-token context fits: use a smaller quant or a bigger card")
        else:
            out.print(f"largest context that fits: {plan.largest_ctx}")
    for source in plan.sources:
        err.print(f"source: {escape(source)}", soft_wrap=True)
    for note in notes:
        err.print(f"note: {escape(note)}", soft_wrap=True)
    return 0


def _plan_json(plan: MemoryPlan, notes: list[str]) -> dict:
    return {
        "profile": plan.profile,
        "n_ctx": plan.n_ctx,
        "lines": [{"what": line.what, "bytes": line.bytes, "note": line.note} for line in plan.lines],
        "total_bytes": plan.total,
        "vram_bytes": plan.vram,
        "vram_source": plan.vram_source,
        "budget_bytes": plan.budget,
        "fits": plan.fits,
        "largest_ctx": plan.largest_ctx,
        "sources": plan.sources,
        "notes": notes,
    }
