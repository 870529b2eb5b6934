"""Tool.preview: the diff an approval prompt shows comes from the tool's own logic.

So it is exactly what run() then writes, and there is none for a call that run() would refuse.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from mcp_types import Tool as RemoteTool

from tools import BashTool, CreateTool, EditTool, GlobTool, GrepTool, InsertTool, Tool, ToolContext, ViewTool
from tools.mcp import McpTool

SOURCE = b"def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    return ToolContext(workspace=workspace, scratch_dir=tmp_path / "scratch")


async def viewed(ctx: ToolContext, name: str, data: bytes) -> Path:
    path = ctx.workspace / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    result = await ViewTool().run({"path": name}, ctx)
    assert not result.is_error, result.output
    return path


async def preview_then_run(tool: Tool, args: dict, ctx: ToolContext) -> str | None:
    """The preview, after checking that it wrote nothing and equals the diff run() reports."""
    before = sorted((p, p.read_bytes()) for p in ctx.workspace.rglob("*") if p.is_file())
    preview = tool.preview(args, ctx)
    assert sorted((p, p.read_bytes()) for p in ctx.workspace.rglob("*") if p.is_file()) == before
    result = await tool.run(args, ctx)
    assert not result.is_error, result.output
    assert preview == (result.metadata["diff"] or None)
    return preview


# --- what is shown ---------------------------------------------------------


async def test_edit_previews_the_replacement(ctx: ToolContext) -> None:
    await viewed(ctx, "m.py", SOURCE)
    args = {"path": "m.py", "old_string": "return a - b", "new_string": "return b - a"}
    diff = await preview_then_run(EditTool(), args, ctx)
    assert diff is not None
    assert diff.startswith("--- a/m.py\n+++ b/m.py\n")
    assert "-    return a - b\n" in diff and "+    return b - a\n" in diff


async def test_edit_replace_all_previews_every_occurrence(ctx: ToolContext) -> None:
    await viewed(ctx, "m.py", SOURCE)
    args = {"path": "m.py", "old_string": "(a, b)", "new_string": "(x, y)", "replace_all": True}
    diff = await preview_then_run(EditTool(), args, ctx)
    assert diff is not None and diff.count("+def ") == 2


async def test_create_previews_a_new_file_and_an_overwrite(ctx: ToolContext) -> None:
    diff = await preview_then_run(CreateTool(), {"path": "pkg/new.py", "content": "x = 1\n"}, ctx)
    assert diff == "--- /dev/null\n+++ b/pkg/new.py\n@@ -0,0 +1 @@\n+x = 1\n"
    diff = await preview_then_run(CreateTool(), {"path": "pkg/new.py", "content": "x = 2\n"}, ctx)
    assert diff is not None and diff.startswith("--- a/pkg/new.py\n+++ b/pkg/new.py\n")
    assert "-x = 1\n+x = 2\n" in diff


async def test_insert_previews_the_new_lines(ctx: ToolContext) -> None:
    await viewed(ctx, "m.py", SOURCE)
    diff = await preview_then_run(InsertTool(), {"path": "m.py", "line": 2, "text": "# added\n"}, ctx)
    assert diff is not None and "+# added\n" in diff
    assert diff.startswith("--- a/m.py\n+++ b/m.py\n")


async def test_absolute_path_inside_the_workspace_shows_the_relative_one(ctx: ToolContext) -> None:
    path = await viewed(ctx, "src/m.py", SOURCE)
    diff = EditTool().preview({"path": str(path), "old_string": "a + b", "new_string": "b + a"}, ctx)
    assert diff is not None and diff.startswith("--- a/src/m.py\n+++ b/src/m.py\n")


async def test_latin1_file_previews_a_diff(ctx: ToolContext) -> None:
    path = await viewed(ctx, "l1.txt", "naïve = 'café'\nother = 1\n".encode("latin-1"))
    args = {"path": "l1.txt", "old_string": "café", "new_string": "crème"}
    diff = await preview_then_run(EditTool(), args, ctx)
    assert diff is not None and "-naïve = 'café'\n" in diff and "+naïve = 'crème'\n" in diff
    assert path.read_bytes() == "naïve = 'crème'\nother = 1\n".encode("latin-1")


async def test_crlf_file_previews_the_text_not_the_line_endings(ctx: ToolContext) -> None:
    await viewed(ctx, "w.txt", b"one\r\ntwo\r\n")
    diff = await preview_then_run(EditTool(), {"path": "w.txt", "old_string": "two", "new_string": "2"}, ctx)
    assert diff is not None and "-two\n+2\n" in diff and "\r" not in diff


# --- nothing where run() would refuse or change nothing --------------------


async def test_ambiguous_old_string_previews_no_replacement(ctx: ToolContext) -> None:
    await viewed(ctx, "m.py", SOURCE)
    args = {"path": "m.py", "old_string": "(a, b)", "new_string": "(x, y)"}
    assert EditTool().preview(args, ctx) is None
    result = await EditTool().run(args, ctx)
    assert result.is_error and "occurs 2 times" in result.output


async def test_missing_old_string_previews_nothing(ctx: ToolContext) -> None:
    await viewed(ctx, "m.py", SOURCE)
    assert EditTool().preview({"path": "m.py", "old_string": "def mul", "new_string": "x"}, ctx) is None


async def test_unviewed_file_previews_nothing(ctx: ToolContext) -> None:
    (ctx.workspace / "m.py").write_bytes(SOURCE)
    assert EditTool().preview({"path": "m.py", "old_string": "a + b", "new_string": "b + a"}, ctx) is None
    assert InsertTool().preview({"path": "m.py", "line": 0, "text": "# top\n"}, ctx) is None
    assert CreateTool().preview({"path": "m.py", "content": "x\n"}, ctx) is None


async def test_line_past_the_end_previews_nothing(ctx: ToolContext) -> None:
    await viewed(ctx, "m.py", SOURCE)
    assert InsertTool().preview({"path": "m.py", "line": 99, "text": "x\n"}, ctx) is None


async def test_path_outside_the_workspace_previews_nothing(ctx: ToolContext, tmp_path: Path) -> None:
    outside = tmp_path / "outside.py"
    outside.write_bytes(SOURCE)
    assert CreateTool().preview({"path": str(outside), "content": "x\n"}, ctx) is None
    assert EditTool().preview({"path": "../outside.py", "old_string": "a + b", "new_string": "b"}, ctx) is None


async def test_bad_arguments_preview_nothing_and_do_not_raise(ctx: ToolContext) -> None:
    await viewed(ctx, "m.py", SOURCE)
    assert EditTool().preview({"path": "m.py", "old_string": "a + b"}, ctx) is None
    assert InsertTool().preview({"path": "m.py", "line": "two", "text": "x"}, ctx) is None
    assert CreateTool().preview({"path": "a\0b", "content": "x"}, ctx) is None
    assert CreateTool().preview([], ctx) is None  # type: ignore[arg-type]  # a wrong argument type, on purpose


async def test_identical_content_previews_nothing(ctx: ToolContext) -> None:
    await viewed(ctx, "m.py", SOURCE)
    assert CreateTool().preview({"path": "m.py", "content": SOURCE.decode()}, ctx) is None


async def test_tools_that_change_no_file_preview_nothing(ctx: ToolContext) -> None:
    await viewed(ctx, "m.py", SOURCE)
    assert ViewTool().preview({"path": "m.py"}, ctx) is None
    assert BashTool().preview({"command": "rm m.py"}, ctx) is None
    assert GrepTool().preview({"pattern": "def"}, ctx) is None
    assert GlobTool().preview({"pattern": "*.py"}, ctx) is None
    remote = RemoteTool(name="write", inputSchema={"type": "object"})
    connection = SimpleNamespace(name="files")
    mcp_tool = McpTool(connection, remote, "mcp__files__write", ctx.scratch_dir)  # type: ignore[arg-type]  # a stand-in connection
    assert mcp_tool.preview({"path": "m.py"}, ctx) is None
