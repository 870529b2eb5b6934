"""Path confinement: every file tool stays inside the workspace."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tools import CreateTool, EditTool, GlobTool, GrepTool, InsertTool, ToolContext, ToolError, ViewTool
from tools.workspace_paths import describe_path_arg, resolve_in_workspace


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.py").write_text("print('a')\n")
    (tmp_path / "outside.txt").write_text("secret\n")
    return root


@pytest.fixture
def ctx(workspace: Path, tmp_path: Path) -> ToolContext:
    return ToolContext(workspace=workspace, scratch_dir=tmp_path / "scratch")


def test_relative_path_resolves_against_workspace(workspace: Path) -> None:
    assert resolve_in_workspace("src/a.py", workspace) == (workspace / "src" / "a.py").resolve()


def test_absolute_path_inside_workspace_is_allowed(workspace: Path) -> None:
    inside = str(workspace / "src" / "a.py")
    assert resolve_in_workspace(inside, workspace) == Path(inside).resolve()


def test_dot_dot_inside_workspace_is_allowed(workspace: Path) -> None:
    assert resolve_in_workspace("src/../src/a.py", workspace) == (workspace / "src" / "a.py").resolve()


def test_dot_dot_escape_is_refused_with_clear_message(workspace: Path) -> None:
    with pytest.raises(ToolError) as caught:
        resolve_in_workspace("../outside.txt", workspace)
    message = str(caught.value)
    assert "../outside.txt is outside the workspace" in message
    assert str(workspace.resolve()) in message
    assert "use a path inside it" in message


def test_absolute_path_outside_is_refused(workspace: Path) -> None:
    with pytest.raises(ToolError, match="outside the workspace"):
        resolve_in_workspace("/etc/passwd", workspace)


def test_symlink_leading_out_is_refused(workspace: Path, tmp_path: Path) -> None:
    (workspace / "link.txt").symlink_to(tmp_path / "outside.txt")
    (workspace / "linkdir").symlink_to(tmp_path)
    with pytest.raises(ToolError, match="through a symlink"):
        resolve_in_workspace("link.txt", workspace)
    with pytest.raises(ToolError, match="outside the workspace"):
        resolve_in_workspace("linkdir/outside.txt", workspace)


def test_symlink_staying_inside_is_allowed(workspace: Path) -> None:
    (workspace / "alias.py").symlink_to(workspace / "src" / "a.py")
    assert resolve_in_workspace("alias.py", workspace) == (workspace / "src" / "a.py").resolve()


def test_empty_path_is_refused(workspace: Path) -> None:
    with pytest.raises(ToolError, match="empty"):
        resolve_in_workspace("  ", workspace)


@pytest.mark.parametrize(
    ("tool", "extra"),
    [
        (ViewTool(), {}),
        (CreateTool(), {"content": "x"}),
        (EditTool(), {"old_string": "a", "new_string": "b"}),
        (InsertTool(), {"line": 0, "text": "x"}),
        (GrepTool(), {"pattern": "secret"}),
        (GlobTool(), {"pattern": "*"}),
    ],
)
async def test_every_file_tool_refuses_escapes(tool, extra, ctx: ToolContext, tmp_path: Path) -> None:
    (ctx.workspace / "out").symlink_to(tmp_path)
    for escape in ["..", "../outside.txt", str(tmp_path / "outside.txt"), "out"]:
        result = await tool.run({"path": escape, **extra}, ctx)
        assert result.is_error, (tool.name, escape)
        assert "outside the workspace" in result.output
    assert (tmp_path / "outside.txt").read_text() == "secret\n"


async def test_create_through_escaping_symlink_writes_nothing(ctx: ToolContext, tmp_path: Path) -> None:
    (ctx.workspace / "out").symlink_to(tmp_path)
    result = await CreateTool().run({"path": "out/new.txt", "content": "x"}, ctx)
    assert result.is_error
    assert not (tmp_path / "new.txt").exists()


def test_describe_path_arg_relativises_absolute_paths(workspace: Path) -> None:
    assert describe_path_arg(str(workspace / "src" / "a.py"), workspace) == "src/a.py"
    assert describe_path_arg("./src//a.py", workspace) == "src/a.py"
    assert describe_path_arg("/etc/passwd", workspace) == os.path.normpath("/etc/passwd")
    assert describe_path_arg(str(workspace), workspace) == "."
