"""grep, glob and the shared file listing, in git repositories and plain directories."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tools import GlobTool, GrepTool, ToolContext
from tools.file_listing import list_files
from tools.glob_patterns import compile_glob


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


async def test_listing_respects_gitignore(ctx: ToolContext) -> None:
    names = relative_names(await list_files(ctx.workspace), ctx.workspace)
    assert names == [
        ".gitignore",
        "README.md",
        "src/app.py",
        "src/image.png",
        "src/notes.md",
        "src/util/helpers.py",
    ]


async def test_listing_of_subdirectory(ctx: ToolContext) -> None:
    base = ctx.workspace / "src" / "util"
    assert relative_names(await list_files(base), ctx.workspace) == ["src/util/helpers.py"]


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


def test_descriptions_of_calls() -> None:
    assert GrepTool().describe_call({"pattern": "TODO", "glob": "*.py"}) == "grep TODO in . (*.py)"
    assert GlobTool().describe_call({"pattern": "**/*.py", "path": "src"}) == "glob **/*.py in src"


async def test_git_listing_honours_nested_gitignore_and_untracked_files(tmp_path: Path) -> None:
    make_tree(tmp_path)
    git_init(tmp_path)
    (tmp_path / "src" / "util" / ".gitignore").write_text("helpers.py\n")
    (tmp_path / "untracked.txt").write_text("new\n")
    names = relative_names(await list_files(tmp_path), tmp_path)
    assert "src/util/helpers.py" not in names
    assert "untracked.txt" in names
    assert "src/app.py" in names


# --- ripgrep as the engine ------------------------------------------------

CATASTROPHIC_GREP = """
import asyncio, sys
from pathlib import Path
from tools import GrepTool, ToolContext

workspace = Path(sys.argv[1])
result = asyncio.run(GrepTool().run({"pattern": "(a+)+$"}, ToolContext(workspace=workspace, scratch_dir=workspace)))
print(result.output)
"""


def test_catastrophic_pattern_answers_at_once(tmp_path: Path) -> None:
    # Backtracking engines take exponential time here and cannot be interrupted, so the
    # search runs in a child interpreter that the test can always kill.
    (tmp_path / "a.txt").write_text("a" * 40 + "!\n")
    repo_root = Path(__file__).resolve().parent.parent
    completed = subprocess.run(
        [sys.executable, "-c", CATASTROPHIC_GREP, str(tmp_path)],
        cwd=repo_root,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert completed.returncode == 0, completed.stderr
    assert "No matches for '(a+)+$'" in completed.stdout
    assert "1 file searched" in completed.stdout


async def test_pattern_starting_with_a_dash(ctx: ToolContext) -> None:
    (ctx.workspace / "flags.txt").write_text("use -v here\n")
    result = await GrepTool().run({"pattern": "-v"}, ctx)
    assert result.output == "flags.txt:1:use -v here"


async def test_lookaround_and_backreferences_are_refused_clearly(ctx: ToolContext) -> None:
    from tools.ripgrep_process import has_pcre2

    for pattern, what in (("TODO(?= =)", "look-around"), ("(o)\\1", "backreferences")):
        result = await GrepTool().run({"pattern": pattern}, ctx)
        if await has_pcre2():
            assert not result.is_error, result.output
            continue
        assert result.is_error
        assert what in result.output
        assert "without PCRE2, so lookaround and backreferences are unsupported" in result.output


async def test_python_only_syntax_names_the_difference(ctx: ToolContext) -> None:
    result = await GrepTool().run({"pattern": "docs\\Z"}, ctx)
    assert result.is_error
    assert "unrecognized escape sequence (at '\\\\Z')" in result.output
    assert "ripgrep's regex syntax" in result.output


async def test_hidden_files_are_searched_but_never_git_internals(ctx: ToolContext) -> None:
    (ctx.workspace / ".github").mkdir()
    (ctx.workspace / ".github" / "ci.yml").write_text("run: TODO\n")
    (ctx.workspace / ".git").mkdir(exist_ok=True)
    (ctx.workspace / ".git" / "notes").write_text("TODO inside git\n")
    result = await GrepTool().run({"pattern": "TODO", "glob": "**/*"}, ctx)
    assert ".github/ci.yml:1:run: TODO" in result.output.splitlines()
    assert ".git/" not in result.output
    refused = await GrepTool().run({"pattern": "TODO", "path": ".git"}, ctx)
    assert refused.is_error and "inside .git" in refused.output
    listed = await GlobTool().run({"pattern": "**/*"}, ctx)
    assert ".github/ci.yml" in listed.output.splitlines()
    assert ".git/" not in listed.output
    shortcut = await GlobTool().run({"pattern": ".git/*"}, ctx)
    assert "No files match" in shortcut.output


async def test_glob_does_not_follow_a_symlinked_directory(ctx: ToolContext, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret\n")
    (ctx.workspace / "linked").symlink_to(outside)
    result = await GlobTool().run({"pattern": "linked/*.txt"}, ctx)
    assert "No files match" in result.output
    everything = await GlobTool().run({"pattern": "**/*.txt"}, ctx)
    assert "secret" not in everything.output


def fsmonitor_repository(root: Path, marker: Path) -> None:
    make_tree(root)
    git_init(root)
    # git runs this for commands that look at the work tree, `git ls-files` among them.
    subprocess.run(
        ["git", "config", "core.fsmonitor", f"touch {marker}; false"],
        cwd=root,
        check=True,
        env={**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_SYSTEM": os.devnull},
    )


async def test_searching_never_runs_git(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    marker = tmp_path / "fsmonitor-ran"
    fsmonitor_repository(workspace, marker)
    ctx = ToolContext(workspace=workspace, scratch_dir=tmp_path / "scratch")
    grep = await GrepTool().run({"pattern": "TODO"}, ctx)
    glob = await GlobTool().run({"pattern": "**/*.py"}, ctx)
    assert not grep.is_error and not glob.is_error
    assert "src/app.py:2:TODO = 'fix me'" in grep.output
    assert "src/app.py" in glob.output.splitlines()
    assert not marker.exists(), "a command from .git/config was executed"


# --- files too large to search ---------------------------------------------


def write_large_file(path: Path, line: str) -> int:
    from tools.grep_tool import MAX_SEARCHED_FILE_BYTES

    repeats = MAX_SEARCHED_FILE_BYTES // len(line) + 1
    path.write_text(line * repeats)
    return path.stat().st_size


async def test_grep_names_the_large_files_it_skipped(ctx: ToolContext) -> None:
    size = write_large_file(ctx.workspace / "dump.sql", "INSERT INTO t VALUES (1);\n")
    miss = await GrepTool().run({"pattern": "INSERT"}, ctx)
    assert not miss.is_error
    assert miss.output.startswith("No matches for 'INSERT' in . (")
    assert "dump.sql" in miss.output and "over 10 MB" in miss.output
    assert f"({size / 1024 / 1024:.1f} MB)" in miss.output
    assert miss.metadata["skipped_large_files"] == [str(ctx.workspace / "dump.sql")]
    found = await GrepTool().run({"pattern": "TODO"}, ctx)
    assert found.output.splitlines()[:2] == ["src/app.py:2:TODO = 'fix me'", "src/notes.md:1:TODO: docs"]
    assert "[not searched: 1 file over 10 MB: dump.sql" in found.output


async def test_only_large_files_is_not_zero_files_and_silence(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    write_large_file(workspace / "big.log", "needle\n")
    ctx = ToolContext(workspace=workspace, scratch_dir=tmp_path / "scratch")
    result = await GrepTool().run({"pattern": "needle"}, ctx)
    assert "not searched: 1 file over 10 MB: big.log" in result.output
    assert result.metadata["files_searched"] == 0


async def test_a_large_file_given_as_path_is_searched(ctx: ToolContext) -> None:
    write_large_file(ctx.workspace / "dump.sql", "INSERT INTO t VALUES (1);\n")
    result = await GrepTool().run({"pattern": "INSERT", "path": "dump.sql", "max_results": 2}, ctx)
    assert result.output.splitlines()[:2] == [
        "dump.sql:1:INSERT INTO t VALUES (1);",
        "dump.sql:2:INSERT INTO t VALUES (1);",
    ]
    assert result.metadata["capped"]


# --- encodings --------------------------------------------------------------


async def test_grep_reads_utf8_with_a_stray_byte_as_utf8(ctx: ToolContext) -> None:
    (ctx.workspace / "menu.txt").write_bytes("café \xff crème\n".encode().replace(b"\xc3\xbf", b"\xff"))
    result = await GrepTool().run({"pattern": "café"}, ctx)
    assert result.output == "menu.txt:1:café ⟦FF⟧ crème"


async def test_grep_still_finds_accented_text_in_latin1_files(ctx: ToolContext) -> None:
    (ctx.workspace / "old.txt").write_bytes("naïve café\nplain\n".encode("latin-1"))
    (ctx.workspace / "cjk.txt").write_text("間違い\n")
    accented = await GrepTool().run({"pattern": "café"}, ctx)
    assert accented.output == "old.txt:1:naïve café"
    ascii_only = await GrepTool().run({"pattern": "na.ve"}, ctx)
    assert ascii_only.output == "old.txt:1:naïve café"
    # Read as latin-1, the UTF-8 bytes of 間 contain é; only real latin-1 files count.
    lone = await GrepTool().run({"pattern": "é"}, ctx)
    assert lone.output == "old.txt:1:naïve café"


async def test_plain_directory_honours_nested_gitignore(tmp_path: Path) -> None:
    make_tree(tmp_path)
    (tmp_path / "src" / "util" / ".gitignore").write_text("helpers.py\n")
    names = relative_names(await list_files(tmp_path), tmp_path)
    assert "src/util/helpers.py" not in names
    assert "src/app.py" in names
