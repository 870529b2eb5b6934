"""grep, glob and the shared file listing, in git repositories and plain directories."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tools import GlobTool, GrepTool, ToolContext
from tools.file_listing import list_files
from tools.glob_patterns import compile_glob
from tools.ignore_rules import IgnoreRules


def make_tree(root: Path) -> None:
    files = {
        "src/app.py": "import os\nTODO = 'fix me'\n",
        "src/util/helpers.py": "def helper():\n    return 'todo later'\n",
        "src/notes.md": "TODO: docs\n",
        "build/out.py": "TODO = 'generated'\n",
        "debug.log": "TODO in log\n",
        "node_modules/pkg/index.js": "// TODO vendored\n",
        "README.md": "hello\n",
    }
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (root / "src" / "image.png").write_bytes(b"\x89PNG\x00\x00TODO")
    (root / ".gitignore").write_text("build/\n*.log\nnode_modules/\n")


def git_init(root: Path) -> None:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_SYSTEM": os.devnull}
    subprocess.run(["git", "init", "-q"], cwd=root, check=True, env=env)
    subprocess.run(["git", "add", "src/app.py"], cwd=root, check=True, env=env)


@pytest.fixture(params=["git", "plain"])
def ctx(request: pytest.FixtureRequest, tmp_path: Path) -> ToolContext:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    make_tree(workspace)
    if request.param == "git":
        git_init(workspace)
    return ToolContext(workspace=workspace, scratch_dir=tmp_path / "scratch")


def relative_names(paths: list[Path], root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in paths)


def test_listing_respects_gitignore(ctx: ToolContext) -> None:
    names = relative_names(list_files(ctx.workspace, ctx.workspace), ctx.workspace)
    assert names == [
        ".gitignore",
        "README.md",
        "src/app.py",
        "src/image.png",
        "src/notes.md",
        "src/util/helpers.py",
    ]


def test_listing_of_subdirectory(ctx: ToolContext) -> None:
    base = ctx.workspace / "src" / "util"
    assert relative_names(list_files(ctx.workspace, base), ctx.workspace) == ["src/util/helpers.py"]


async def test_grep_finds_matches_skipping_ignored_and_binary(ctx: ToolContext) -> None:
    result = await GrepTool().run({"pattern": "TODO"}, ctx)
    assert not result.is_error
    assert result.output.splitlines() == ["src/app.py:2:TODO = 'fix me'", "src/notes.md:1:TODO: docs"]


async def test_grep_case_insensitive_and_glob(ctx: ToolContext) -> None:
    result = await GrepTool().run({"pattern": "todo", "case_insensitive": True, "glob": "*.py"}, ctx)
    assert result.output.splitlines() == [
        "src/app.py:2:TODO = 'fix me'",
        "src/util/helpers.py:2:    return 'todo later'",
    ]
    by_path = await GrepTool().run({"pattern": "todo", "case_insensitive": True, "glob": "src/*.py"}, ctx)
    assert by_path.output.splitlines() == ["src/app.py:2:TODO = 'fix me'"]


async def test_grep_in_a_single_file(ctx: ToolContext) -> None:
    result = await GrepTool().run({"pattern": "^def", "path": "src/util/helpers.py"}, ctx)
    assert result.output == "src/util/helpers.py:1:def helper():"


async def test_grep_caps_results(ctx: ToolContext) -> None:
    (ctx.workspace / "many.txt").write_text("hit\n" * 50)
    result = await GrepTool().run({"pattern": "hit", "path": "many.txt", "max_results": 5}, ctx)
    assert len([line for line in result.output.splitlines() if line.startswith("many.txt:")]) == 5
    assert "results capped at 5" in result.output
    assert result.metadata["capped"]


async def test_grep_no_match_is_not_an_error(ctx: ToolContext) -> None:
    result = await GrepTool().run({"pattern": "zzz_nothing"}, ctx)
    assert not result.is_error
    assert "No matches" in result.output


async def test_grep_bad_inputs(ctx: ToolContext) -> None:
    bad_regex = await GrepTool().run({"pattern": "(unclosed"}, ctx)
    assert bad_regex.is_error and "not a valid Python regular expression" in bad_regex.output
    missing_path = await GrepTool().run({"pattern": "x", "path": "nowhere"}, ctx)
    assert missing_path.is_error and "does not exist" in missing_path.output
    no_pattern = await GrepTool().run({}, ctx)
    assert no_pattern.is_error and "missing required argument 'pattern'" in no_pattern.output
    bad_max = await GrepTool().run({"pattern": "x", "max_results": 0}, ctx)
    assert bad_max.is_error and "max_results" in bad_max.output


async def test_glob_recursive_pattern_respects_gitignore(ctx: ToolContext) -> None:
    result = await GlobTool().run({"pattern": "**/*.py"}, ctx)
    assert sorted(result.output.splitlines()) == ["src/app.py", "src/util/helpers.py"]


async def test_glob_sorts_newest_first(ctx: ToolContext) -> None:
    os.utime(ctx.workspace / "src/app.py", (1_000_000, 1_000_000))
    os.utime(ctx.workspace / "src/util/helpers.py", (2_000_000, 2_000_000))
    result = await GlobTool().run({"pattern": "src/**/*.py"}, ctx)
    assert result.output.splitlines() == ["src/util/helpers.py", "src/app.py"]


async def test_glob_relative_to_path(ctx: ToolContext) -> None:
    result = await GlobTool().run({"pattern": "*.md", "path": "src"}, ctx)
    assert result.output == "src/notes.md"


async def test_glob_top_level_pattern_hints_at_recursion(ctx: ToolContext) -> None:
    result = await GlobTool().run({"pattern": "*.py"}, ctx)
    assert not result.is_error
    assert "**/*.py" in result.output


async def test_glob_bad_inputs(ctx: ToolContext) -> None:
    escaping = await GlobTool().run({"pattern": "../*"}, ctx)
    assert escaping.is_error and "must be relative" in escaping.output
    not_dir = await GlobTool().run({"pattern": "*", "path": "README.md"}, ctx)
    assert not_dir.is_error and "not a directory" in not_dir.output
    empty = await GlobTool().run({"pattern": ""}, ctx)
    assert empty.is_error


def test_glob_pattern_semantics() -> None:
    assert compile_glob("**/*.py").match("a.py")
    assert compile_glob("**/*.py").match("x/y/a.py")
    assert not compile_glob("*.py").match("x/a.py")
    assert compile_glob("src/**").match("src/a/b.txt")
    assert compile_glob("a/**/b").match("a/b")
    assert compile_glob("a/**/b").match("a/x/y/b")
    assert compile_glob("file?.[ch]").match("file1.c")
    assert not compile_glob("file[!0-9].c").match("file1.c")


def test_ignore_rules_semantics() -> None:
    rules = IgnoreRules.from_lines(["# comment", "*.log", "!keep.log", "/build", "docs/*.tmp", "cache/"])
    assert rules.is_ignored("x/y/debug.log", is_dir=False)
    assert not rules.is_ignored("keep.log", is_dir=False)
    assert rules.is_ignored("build", is_dir=True)
    assert not rules.is_ignored("src/build", is_dir=True)
    assert rules.is_ignored("docs/a.tmp", is_dir=False)
    assert rules.is_ignored("deep/cache", is_dir=True)
    assert not rules.is_ignored("cache", is_dir=False)


def test_descriptions_of_calls() -> None:
    assert GrepTool().describe_call({"pattern": "TODO", "glob": "*.py"}) == "grep TODO in . (*.py)"
    assert GlobTool().describe_call({"pattern": "**/*.py", "path": "src"}) == "glob **/*.py in src"


def test_git_listing_honours_nested_gitignore_and_untracked_files(tmp_path: Path) -> None:
    # Only git knows nested .gitignore files, so this shows the git listing is in use.
    make_tree(tmp_path)
    git_init(tmp_path)
    (tmp_path / "src" / "util" / ".gitignore").write_text("helpers.py\n")
    (tmp_path / "untracked.txt").write_text("new\n")
    names = relative_names(list_files(tmp_path, tmp_path), tmp_path)
    assert "src/util/helpers.py" not in names
    assert "untracked.txt" in names
    assert "src/app.py" in names
