"""Build llama-server and its RPC worker (or find them cached) with a progress bar on stderr."""

from __future__ import annotations

from pathlib import Path

from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from localagent.console import err
from localagent.context import AppContext
from server.build import BuildRequest, BuildResult, build_llama_server
from server.smoke import SmokeResult, smoke_test_sync


def build_with_progress(ctx: AppContext, request: BuildRequest) -> BuildResult:
    """Build (or find cached) llama-server and its RPC worker, with a progress bar on stderr."""
    dirs = ctx.paths.server_dirs()
    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        TextColumn("{task.percentage:>3.0f}%"),
        TimeElapsedColumn(),
        TextColumn("{task.fields[detail]}"),
        console=err,
        transient=True,
    ) as progress:
        task = progress.add_task("building llama-server", total=100, detail="")

        def report(percent: int, detail: str) -> None:
            progress.update(task, completed=percent, detail=escape(detail[:60]))

        def verify(binary: Path, log: Path) -> SmokeResult:
            def on_case(name: str) -> None:
                progress.update(task, description="smoke test", detail=escape(name))

            return smoke_test_sync(binary, dirs.model_dirs, log, on_case=on_case)

        def notice(line: str) -> None:
            progress.console.print(f"note: {escape(line)}", soft_wrap=True)

        return build_llama_server(
            request, dirs.builds, dirs.work, report, verify=verify, notice=notice, toolkits_dir=dirs.cache
        )
