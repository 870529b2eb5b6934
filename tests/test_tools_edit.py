"""The file-changing tools: edit, insert and create."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools import CreateTool, EditTool, InsertTool, ToolContext, ViewTool


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


SOURCE = b"def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"


# --- edit -----------------------------------------------------------------


async def test_edit_replaces_once_and_reports_diff_and_snippet(ctx: ToolContext) -> None:
    path = await viewed(ctx, "m.py", SOURCE)
    result = await EditTool().run(
        {"path": "m.py", "old_string": "    return a - b", "new_string": "    return a - b  # minus"}, ctx
    )
    assert not result.is_error, result.output
    assert path.read_bytes() == SOURCE.replace(b"a - b\n", b"a - b  # minus\n")
    assert result.metadata["files_changed"] == ["m.py"]
    diff = result.metadata["diff"]
    assert diff.startswith("--- a/m.py\n+++ b/m.py\n")
    assert "-    return a - b\n+    return a - b  # minus\n" in diff
    assert "     6\t    return a - b  # minus" in result.output


async def test_edit_requires_prior_view(ctx: ToolContext) -> None:
    path = ctx.workspace / "m.py"
    path.write_bytes(SOURCE)
    result = await EditTool().run({"path": "m.py", "old_string": "add", "new_string": "plus"}, ctx)
    assert result.is_error
    assert "has not been viewed" in result.output and "view it first" in result.output
    assert path.read_bytes() == SOURCE


async def test_edit_miss_shows_closest_lines_and_changes_nothing(ctx: ToolContext) -> None:
    path = await viewed(ctx, "m.py", SOURCE)
    result = await EditTool().run(
        {"path": "m.py", "old_string": "def sub(a, c):\n    return a - c", "new_string": "x"}, ctx
    )
    assert result.is_error
    assert "not found" in result.output and "nothing was changed" in result.output
    assert "     5\tdef sub(a, b):\n     6\t    return a - b" in result.output
    assert path.read_bytes() == SOURCE


async def test_edit_multiple_matches_refused_with_line_numbers(ctx: ToolContext) -> None:
    path = await viewed(ctx, "m.py", SOURCE)
    result = await EditTool().run({"path": "m.py", "old_string": "(a, b):", "new_string": "(x, y):"}, ctx)
    assert result.is_error
    assert "occurs 2 times" in result.output
    assert "lines 1, 5" in result.output
    assert path.read_bytes() == SOURCE


async def test_edit_replace_all(ctx: ToolContext) -> None:
    path = await viewed(ctx, "m.py", SOURCE)
    result = await EditTool().run(
        {"path": "m.py", "old_string": "(a, b):", "new_string": "(x, y):", "replace_all": True}, ctx
    )
    assert not result.is_error
    assert path.read_bytes().count(b"(x, y):") == 2
    assert "replaced 2 occurrences" in result.output
    assert result.metadata["replacements"] == 2


async def test_edit_identical_strings_refused(ctx: ToolContext) -> None:
    await viewed(ctx, "m.py", SOURCE)
    result = await EditTool().run({"path": "m.py", "old_string": "add", "new_string": "add"}, ctx)
    assert result.is_error and "identical" in result.output


async def test_edit_empty_old_string_refused(ctx: ToolContext) -> None:
    await viewed(ctx, "m.py", SOURCE)
    result = await EditTool().run({"path": "m.py", "old_string": "", "new_string": "x"}, ctx)
    assert result.is_error and "old_string is empty" in result.output


async def test_edit_crlf_file_keeps_crlf_bytes(ctx: ToolContext) -> None:
    original = b"alpha\r\nbeta\r\ngamma\r\n"
    path = await viewed(ctx, "w.txt", original)
    result = await EditTool().run(
        {"path": "w.txt", "old_string": "alpha\nbeta", "new_string": "alpha\nBETA\nbeta2"}, ctx
    )
    assert not result.is_error, result.output
    assert path.read_bytes() == b"alpha\r\nBETA\r\nbeta2\r\ngamma\r\n"


async def test_edit_crlf_input_on_crlf_file(ctx: ToolContext) -> None:
    path = await viewed(ctx, "w.txt", b"one\r\ntwo\r\n")
    result = await EditTool().run({"path": "w.txt", "old_string": "one\r\ntwo", "new_string": "1\r\n2"}, ctx)
    assert not result.is_error
    assert path.read_bytes() == b"1\r\n2\r\n"


async def test_edit_latin1_round_trip(ctx: ToolContext) -> None:
    path = await viewed(ctx, "l1.txt", "naïve = 'café'\nother = 1\n".encode("latin-1"))
    result = await EditTool().run({"path": "l1.txt", "old_string": "'café'", "new_string": "'crème'"}, ctx)
    assert not result.is_error, result.output
    assert path.read_bytes() == "naïve = 'crème'\nother = 1\n".encode("latin-1")


async def test_edit_latin1_refuses_unencodable_text(ctx: ToolContext) -> None:
    original = "café\n".encode("latin-1")
    path = await viewed(ctx, "l1.txt", original)
    result = await EditTool().run({"path": "l1.txt", "old_string": "café", "new_string": "café ☕"}, ctx)
    assert result.is_error and "latin-1" in result.output
    assert path.read_bytes() == original


async def test_edit_keeps_missing_trailing_newline(ctx: ToolContext) -> None:
    path = await viewed(ctx, "n.txt", b"a\nb")
    result = await EditTool().run({"path": "n.txt", "old_string": "b", "new_string": "B"}, ctx)
    assert not result.is_error
    assert path.read_bytes() == b"a\nB"
    assert "\\ No newline at end of file" in result.metadata["diff"]


async def test_edit_missing_file_binary_file_and_directory(ctx: ToolContext) -> None:
    tool = EditTool()
    args = {"old_string": "a", "new_string": "b"}
    missing = await tool.run({"path": "gone.py", **args}, ctx)
    assert missing.is_error and "does not exist" in missing.output
    (ctx.workspace / "bin.dat").write_bytes(b"a\x00b")
    binary = await tool.run({"path": "bin.dat", **args}, ctx)
    assert binary.is_error and "binary" in binary.output
    (ctx.workspace / "dir").mkdir()
    directory = await tool.run({"path": "dir", **args}, ctx)
    assert directory.is_error and "is a directory" in directory.output


async def test_edit_schema_errors(ctx: ToolContext) -> None:
    result = await EditTool().run({"path": "m.py", "old_string": "a"}, ctx)
    assert result.is_error and "missing required argument 'new_string'" in result.output
    result = await EditTool().run({"path": "m.py", "old_string": "a", "new_string": "b", "replace_all": "yes"}, ctx)
    assert result.is_error and "'replace_all' must be of type boolean" in result.output


def numbered_source(line_count: int) -> str:
    """Functions alike enough that a near miss has many plausible places."""
    lines = []
    for number in range(line_count // 4 + 1):
        lines += [
            f"def handler_{number}(request, retries={number % 5}):",
            f"    result = session.call('service_{number % 17}', request, timeout={10 + number % 7})",
            f"    return respond(result, tag='h{number}')",
            "",
        ]
    return "\n".join(lines[:line_count]) + "\n"


async def test_edit_miss_in_a_large_file_points_at_the_right_lines(ctx: ToolContext) -> None:
    source = numbered_source(10_000)
    path = await viewed(ctx, "big.py", source.encode())
    lines = source.splitlines()
    wanted = lines[6_001:6_041]
    wanted[20] = wanted[20].replace("result", "resutl")
    result = await EditTool().run({"path": "big.py", "old_string": "\n".join(wanted), "new_string": "x"}, ctx)
    assert result.is_error and "not found" in result.output
    assert "(99% alike)" in result.output
    assert f"  6002\t{lines[6_001]}\n" in result.output
    assert f"  6041\t{lines[6_040]}\n" in result.output
    assert path.read_text() == source


async def test_edit_miss_with_every_line_reindented_still_finds_them(ctx: ToolContext) -> None:
    source = numbered_source(2_000)
    await viewed(ctx, "m.py", source.encode())
    lines = source.splitlines()
    wanted = "\n".join("  " + line.strip() for line in lines[1_200:1_212])
    result = await EditTool().run({"path": "m.py", "old_string": wanted, "new_string": "x"}, ctx)
    assert f"  1201\t{lines[1_200]}\n" in result.output


async def test_edit_miss_search_runs_off_the_event_loop(ctx: ToolContext, monkeypatch: pytest.MonkeyPatch) -> None:
    import asyncio
    import time

    import tools.edit_tool
    from tools.closest_match import find_closest_lines

    def slow_search(file_text: str, wanted: str):
        time.sleep(0.5)
        return find_closest_lines(file_text, wanted)

    monkeypatch.setattr(tools.edit_tool, "find_closest_lines", slow_search)
    await viewed(ctx, "m.py", SOURCE)
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    ticker = asyncio.create_task(tick())
    result = await EditTool().run({"path": "m.py", "old_string": "def mul", "new_string": "x"}, ctx)
    ticker.cancel()
    assert result.is_error and "not found" in result.output
    # Blocked for the whole search, the loop would not have ticked at all.
    assert ticks >= 10


# --- bytes that are not valid UTF-8 ---------------------------------------

STRAY = "café = 1\nmenu = 'crème \udcff brûlée'\nlast = 2\n".encode("utf-8", "surrogateescape")


async def test_edit_elsewhere_keeps_a_stray_byte_and_writes_utf8(ctx: ToolContext) -> None:
    path = await viewed(ctx, "menu.py", STRAY)
    result = await EditTool().run({"path": "menu.py", "old_string": "last = 2", "new_string": "last = 'thé'"}, ctx)
    assert not result.is_error, result.output
    assert path.read_bytes() == STRAY.replace(b"last = 2", "last = 'thé'".encode())
    assert "\\udc" not in result.metadata["diff"] and "\udcff" not in result.output


async def test_edit_of_the_line_with_the_stray_byte_goes_through_its_marker(ctx: ToolContext) -> None:
    path = await viewed(ctx, "menu.py", STRAY)
    result = await EditTool().run(
        {"path": "menu.py", "old_string": "'crème ⟦FF⟧ brûlée'", "new_string": "'crème ⟦FF⟧ brûlée!'"}, ctx
    )
    assert not result.is_error, result.output
    assert path.read_bytes() == STRAY.replace("brûlée'".encode(), "brûlée!'".encode())


async def test_marker_lookalike_text_stays_byte_exact(ctx: ToolContext) -> None:
    # Already holding "⟦FF⟧" as text, the file cannot use markers; latin-1 keeps every byte.
    original = "note = '⟦FF⟧'\nraw = '\udcfe'\nend = 1\n".encode("utf-8", "surrogateescape")
    path = await viewed(ctx, "odd.py", original)
    result = await EditTool().run({"path": "odd.py", "old_string": "end = 1", "new_string": "end = 2"}, ctx)
    assert not result.is_error, result.output
    assert path.read_bytes() == original.replace(b"end = 1", b"end = 2")


# --- insert ---------------------------------------------------------------


async def test_insert_after_line(ctx: ToolContext) -> None:
    path = await viewed(ctx, "f.txt", b"one\ntwo\nthree\n")
    result = await InsertTool().run({"path": "f.txt", "line": 2, "text": "two and a half\n"}, ctx)
    assert not result.is_error, result.output
    assert path.read_bytes() == b"one\ntwo\ntwo and a half\nthree\n"
    assert "+two and a half\n" in result.metadata["diff"]
    assert "     3\ttwo and a half" in result.output


async def test_insert_at_top_and_end(ctx: ToolContext) -> None:
    path = await viewed(ctx, "f.txt", b"a\nb")
    await InsertTool().run({"path": "f.txt", "line": 0, "text": "top"}, ctx)
    await InsertTool().run({"path": "f.txt", "line": 3, "text": "end"}, ctx)
    # The file had no final newline and still has none.
    assert path.read_bytes() == b"top\na\nb\nend"


async def test_insert_keeps_crlf(ctx: ToolContext) -> None:
    path = await viewed(ctx, "w.txt", b"a\r\nb\r\n")
    result = await InsertTool().run({"path": "w.txt", "line": 1, "text": "x\ny"}, ctx)
    assert not result.is_error
    assert path.read_bytes() == b"a\r\nx\r\ny\r\nb\r\n"


async def test_insert_requires_view_and_valid_line(ctx: ToolContext) -> None:
    (ctx.workspace / "f.txt").write_text("a\n")
    unviewed = await InsertTool().run({"path": "f.txt", "line": 0, "text": "x"}, ctx)
    assert unviewed.is_error and "view it first" in unviewed.output
    await ViewTool().run({"path": "f.txt"}, ctx)
    past_end = await InsertTool().run({"path": "f.txt", "line": 5, "text": "x"}, ctx)
    assert past_end.is_error and "from 0 to 1" in past_end.output
    negative = await InsertTool().run({"path": "f.txt", "line": -1, "text": "x"}, ctx)
    assert negative.is_error and "line" in negative.output
    assert (ctx.workspace / "f.txt").read_text() == "a\n"


# --- create ---------------------------------------------------------------


async def test_create_new_file_with_parents(ctx: ToolContext) -> None:
    result = await CreateTool().run({"path": "pkg/sub/new.py", "content": "x = 1\n"}, ctx)
    assert not result.is_error, result.output
    assert (ctx.workspace / "pkg/sub/new.py").read_text() == "x = 1\n"
    assert result.metadata["files_changed"] == ["pkg/sub/new.py"]
    assert result.metadata["diff"].startswith("--- /dev/null\n+++ b/pkg/sub/new.py\n")
    assert "+x = 1\n" in result.metadata["diff"]
    # Created by the model, so it may be edited straight away.
    edit = await EditTool().run({"path": "pkg/sub/new.py", "old_string": "1", "new_string": "2"}, ctx)
    assert not edit.is_error


async def test_create_refuses_overwrite_without_view(ctx: ToolContext) -> None:
    path = ctx.workspace / "keep.txt"
    path.write_text("precious\n")
    result = await CreateTool().run({"path": "keep.txt", "content": "gone\n"}, ctx)
    assert result.is_error and "view it first" in result.output
    assert path.read_text() == "precious\n"


async def test_create_overwrites_after_view(ctx: ToolContext) -> None:
    path = await viewed(ctx, "keep.txt", b"old\n")
    result = await CreateTool().run({"path": "keep.txt", "content": "new\n"}, ctx)
    assert not result.is_error
    assert path.read_text() == "new\n"
    assert "-old\n+new\n" in result.metadata["diff"]
    assert result.output.startswith("Overwrote keep.txt")


async def test_create_on_directory_is_refused(ctx: ToolContext) -> None:
    (ctx.workspace / "d").mkdir()
    result = await CreateTool().run({"path": "d", "content": "x"}, ctx)
    assert result.is_error and "is a directory" in result.output


async def test_create_schema_error(ctx: ToolContext) -> None:
    result = await CreateTool().run({"path": "x.txt"}, ctx)
    assert result.is_error and "missing required argument 'content'" in result.output
