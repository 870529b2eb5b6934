"""The view tool."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools import ToolContext, ViewTool
from tools.view_tool import DEFAULT_VIEW_LINES, MAX_LINE_CHARS


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    return ToolContext(workspace=workspace, scratch_dir=tmp_path / "scratch")


async def test_shows_numbered_lines_and_records_view(ctx: ToolContext) -> None:
    path = ctx.workspace / "a.py"
    path.write_text("first\n\tsecond\nthird\n")
    result = await ViewTool().run({"path": "a.py"}, ctx)
    assert not result.is_error
    assert result.output == "     1\tfirst\n     2\t\tsecond\n     3\tthird"
    assert path.resolve() in ctx.viewed_files
    assert result.metadata["total_lines"] == 3


async def test_offset_and_limit(ctx: ToolContext) -> None:
    (ctx.workspace / "n.txt").write_text("".join(f"line {i}\n" for i in range(1, 51)))
    result = await ViewTool().run({"path": "n.txt", "offset": 10, "limit": 3}, ctx)
    body = result.output.splitlines()
    assert body[:3] == ["    10\tline 10", "    11\tline 11", "    12\tline 12"]
    assert "[showing lines 10-12 of 50]" in result.output
    assert "offset=13" in result.output


async def test_caps_at_default_line_count(ctx: ToolContext) -> None:
    (ctx.workspace / "big.txt").write_text("x\n" * (DEFAULT_VIEW_LINES + 10))
    result = await ViewTool().run({"path": "big.txt"}, ctx)
    assert f"[showing lines 1-{DEFAULT_VIEW_LINES} of {DEFAULT_VIEW_LINES + 10}]" in result.output
    assert f"offset={DEFAULT_VIEW_LINES + 1}" in result.output


async def test_long_lines_are_truncated_and_said_so(ctx: ToolContext) -> None:
    (ctx.workspace / "wide.txt").write_text("y" * (MAX_LINE_CHARS + 500) + "\nshort\n")
    result = await ViewTool().run({"path": "wide.txt"}, ctx)
    assert f"line truncated, {MAX_LINE_CHARS + 500} characters in total" in result.output
    assert "1 line(s) longer than" in result.output
    assert "     2\tshort" in result.output


async def test_offset_past_end_is_an_error(ctx: ToolContext) -> None:
    (ctx.workspace / "s.txt").write_text("one\n")
    result = await ViewTool().run({"path": "s.txt", "offset": 5}, ctx)
    assert result.is_error
    assert "offset 5 is past the end" in result.output


async def test_empty_file(ctx: ToolContext) -> None:
    (ctx.workspace / "e.txt").write_text("")
    result = await ViewTool().run({"path": "e.txt"}, ctx)
    assert not result.is_error
    assert "empty" in result.output


async def test_binary_file_is_refused_with_size(ctx: ToolContext) -> None:
    (ctx.workspace / "img.bin").write_bytes(b"\x89PNG\r\n\x00\x00" + bytes(range(256)) * 4)
    result = await ViewTool().run({"path": "img.bin"}, ctx)
    assert result.is_error
    assert "binary file" in result.output
    assert "1,032 bytes" in result.output
    assert not ctx.viewed_files


async def test_undecodable_control_bytes_count_as_binary(ctx: ToolContext) -> None:
    (ctx.workspace / "blob").write_bytes(bytes([0x01, 0x02, 0x03, 0xFF, 0xFE, 0x10]) * 100)
    result = await ViewTool().run({"path": "blob"}, ctx)
    assert result.is_error and "binary" in result.output


async def test_latin1_text_is_viewable(ctx: ToolContext) -> None:
    (ctx.workspace / "l1.txt").write_bytes("café crème\n".encode("latin-1"))
    result = await ViewTool().run({"path": "l1.txt"}, ctx)
    assert not result.is_error
    assert "café crème" in result.output
    assert result.metadata["encoding"] == "latin-1"


async def test_utf8_with_a_stray_byte_stays_utf8_and_marks_the_byte(ctx: ToolContext) -> None:
    (ctx.workspace / "menu.txt").write_bytes(b"caf\xc3\xa9 \xff cr\xc3\xa8me\nplain\n")
    result = await ViewTool().run({"path": "menu.txt"}, ctx)
    assert not result.is_error
    assert result.output.splitlines()[:2] == ["     1\tcafé ⟦FF⟧ crème", "     2\tplain"]
    assert "1 byte is not valid UTF-8" in result.output
    assert result.metadata["encoding"] == "utf-8"
    assert result.metadata["stray_bytes"] == 1


async def test_latin1_with_many_accents_stays_latin1(ctx: ToolContext) -> None:
    text = "Ça a été très énervé, dît-il à l'élève.\n" * 20
    (ctx.workspace / "fr.txt").write_bytes(text.encode("latin-1"))
    result = await ViewTool().run({"path": "fr.txt"}, ctx)
    assert "Ça a été très énervé" in result.output
    assert result.metadata["encoding"] == "latin-1"
    assert "⟦" not in result.output


async def test_crlf_file_shows_clean_lines(ctx: ToolContext) -> None:
    (ctx.workspace / "w.txt").write_bytes(b"a\r\nb\r\n")
    result = await ViewTool().run({"path": "w.txt"}, ctx)
    assert result.output == "     1\ta\n     2\tb"


async def test_directory_lists_entries(ctx: ToolContext) -> None:
    (ctx.workspace / "pkg").mkdir()
    (ctx.workspace / "pkg" / "mod.py").write_text("")
    (ctx.workspace / "README.md").write_text("")
    result = await ViewTool().run({"path": "."}, ctx)
    assert not result.is_error
    assert result.output.splitlines()[1:] == ["README.md", "pkg/"]
    assert result.metadata["is_directory"] is True


async def test_missing_file(ctx: ToolContext) -> None:
    result = await ViewTool().run({"path": "nope.py"}, ctx)
    assert result.is_error
    assert "nope.py does not exist" in result.output


async def test_schema_errors(ctx: ToolContext) -> None:
    tool = ViewTool()
    assert "missing required argument 'path'" in (await tool.run({}, ctx)).output
    bad_offset = await tool.run({"path": "x", "offset": 0}, ctx)
    assert bad_offset.is_error and "offset" in bad_offset.output
    extra = await tool.run({"path": "x", "lines": 3}, ctx)
    assert extra.is_error and "unexpected argument 'lines'" in extra.output
