"""The TUI's pure input parts: @mentions and what they attach, the fuzzy ranking of paths, the
prompt history file, ! commands, the /init prompt and the approval modal's save keys."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from tui import attachments, commands
from tui.file_ranking import rank_paths
from tui.init_prompt import init_prompt
from tui.prompt_history import PromptHistory, history_file_for
from tui.screens.approval import save_keys


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "work"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("print('app')\n")
    (root / "notes.txt").write_text("v1\n")
    return root


def test_mentions_are_words_that_start_with_an_at_sign() -> None:
    text = 'see @src/app.py and @"docs/a b.md", mail me@example.com, @src/app.py again\n@x'
    assert attachments.mentions(text) == ["src/app.py", "docs/a b.md", "x"]
    assert attachments.mention_for("docs/a b.md") == '@"docs/a b.md"'
    assert attachments.mention_for("src/app.py") == "@src/app.py"


async def test_expand_reads_the_files_and_leaves_other_mentions_as_text(workspace: Path) -> None:
    result = await attachments.expand("fix @src/app.py, see @notes.txt. cc @someone @src", workspace)
    assert [(f.shown, f.text) for f in result.files] == [("src/app.py", "print('app')\n"), ("notes.txt", "v1\n")]
    assert result.refused == [] and result.as_text == ["someone", "src"]


async def test_outside_the_workspace_through_a_symlink_in_git_or_binary_is_refused(workspace: Path) -> None:
    secret = workspace.parent / "secret.txt"
    secret.write_text("password\n")
    (workspace / "link.txt").symlink_to(secret)
    (workspace / ".git").mkdir()
    (workspace / ".git" / "config").write_text("[core]\n")
    (workspace / "blob.bin").write_bytes(b"\0\1\2" * 10)
    for mention, says in [
        ("@../secret.txt", "outside the workspace"),
        (f"@{secret}", "outside the workspace"),
        ("@link.txt", "through a symlink"),
        ("@.git/config", "inside .git"),
        ("@blob.bin", "binary"),
    ]:
        result = await attachments.expand(f"read {mention}", workspace)
        assert result.files == [] and len(result.refused) == 1 and says in result.refused[0], (mention, result)


async def test_large_files_are_cut_to_the_cap(workspace: Path) -> None:
    (workspace / "big.txt").write_text("x" * (attachments.MAX_FILE_CHARS + 10))
    (big,) = (await attachments.expand("@big.txt", workspace)).files
    assert len(big.text) == attachments.MAX_FILE_CHARS and big.omitted_chars == 10
    assert "10 more characters not attached; view big.txt" in attachments.file_block(big)


def test_compose_puts_the_context_after_the_typed_text_and_typed_part_takes_it_off() -> None:
    files = [attachments.Attached("a.md", "has ``` inside\n")]
    notes = [attachments.shell_note("ls", "a.md\n[exit code: 0]")]
    message = attachments.compose("explain @a.md", notes, files)
    assert message.startswith("explain @a.md\n\n" + attachments.CONTEXT_MARK)
    assert message.index("ran this shell command themselves (not you): ls") < message.index("File a.md")
    assert "````\nhas ``` inside\n````" in message  # the fence outgrows the file's own
    assert attachments.typed_part(message) == "explain @a.md"
    assert attachments.compose("plain", [], []) == "plain"
    assert attachments.typed_part("plain") == "plain"


def test_shell_notes_keep_the_head_and_tail_of_long_output() -> None:
    output = "\n".join(f"line {n}" for n in range(5000)) + "\n[exit code: 0]"
    note = attachments.shell_note("seq", output)
    assert len(note) < attachments.MAX_SHELL_CHARS + 500
    assert "line 0\n" in note and "[exit code: 0]" in note and "lines cut" in note


def test_ranking_prefers_in_order_matches_and_the_file_name() -> None:
    paths = [
        "tui/screens/chat.tcss",
        "tui/screens/chat_commands.py",
        "tui/screens/chat.py",
        "agent/loop.py",
        "README.md",
    ]
    assert rank_paths("chat.py", paths)[0] == "tui/screens/chat.py"
    assert rank_paths("loop", paths)[0] == "agent/loop.py"
    assert rank_paths("readme", paths)[0] == "README.md"
    assert rank_paths("scrcmd", paths) == ["tui/screens/chat_commands.py"]
    assert rank_paths("lopo", paths)[0] == "agent/loop.py"  # no in-order match: typo-tolerant
    assert rank_paths("", paths, limit=2) == paths[:2]


def test_prompt_history_file_round_trip_is_private_and_trimmed(tmp_path: Path) -> None:
    path = history_file_for(tmp_path / "data", tmp_path / "repo")
    assert path != history_file_for(tmp_path / "data", tmp_path / "other")
    assert path.parent == tmp_path / "data" / "prompt-history"
    history = PromptHistory(path, max_entries=3)
    assert history.load() == []
    for text in ["one", "two\nlines", "   ", "three", "four", "five", "six"]:
        history.append(text)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert PromptHistory(path, max_entries=3).load() == ["four", "five", "six"]
    assert len(path.read_text().splitlines()) == 3  # rewritten at twice the limit
    with path.open("a") as handle:
        handle.write('{"text": "cut sho\n' + json.dumps({"text": "seven"}) + "\n")
    assert PromptHistory(path, max_entries=3).load() == ["five", "six", "seven"]


def test_prompt_history_without_a_file_or_with_an_unwritable_one(tmp_path: Path) -> None:
    PromptHistory().append("kept nowhere")
    assert PromptHistory().load() == []
    blocked = tmp_path / "file"
    blocked.write_text("")
    history = PromptHistory(blocked / "sub" / "h.jsonl")
    history.append("lost, quietly")
    assert history.load() == []
    if os.geteuid() != 0:
        assert not (blocked / "sub").exists()


def test_bang_commands_and_escapes() -> None:
    assert commands.shell_command("!git status") == "git status"
    assert commands.shell_command("  ! ls -la ") == "ls -la"
    assert commands.shell_command("!") == ""
    assert commands.shell_command("!!important") is None
    assert commands.unescape("!!important") == "!important"
    assert commands.shell_command("say !hi") is None
    assert "/init" in commands.help_text() and "!command" in commands.help_text()


def test_init_prompt_creates_or_improves(tmp_path: Path) -> None:
    create = init_prompt(tmp_path)
    assert "create AGENTS.md at the repository root with the create tool" in create
    assert "CLAUDE.md" not in create
    (tmp_path / "CLAUDE.md").write_text("old\n")
    assert "has a CLAUDE.md: read it" in init_prompt(tmp_path)
    (tmp_path / "AGENTS.md").write_text("rules\n")
    improve = init_prompt(tmp_path)
    assert "already has an AGENTS.md" in improve and "with the edit tool" in improve


def test_save_keys_take_a_free_first_letter_or_a_digit() -> None:
    assert save_keys(["user config", "project config"]) == ["u", "p"]
    assert save_keys(["all", "user", "users"]) == ["4", "u", "6"]


async def test_a_fifo_mentioned_or_swapped_in_never_blocks(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    os.mkfifo(workspace / "pipe")
    expansion = await attachments.expand("look at @pipe", workspace)
    assert expansion.files == [] and expansion.refused == []
    # Swapped in after the check: the one O_NONBLOCK | O_NOFOLLOW open that reads it refuses it.
    (workspace / "notes.txt").write_text("x\n")
    checked = attachments._resolve

    def swapped(raw: str, root: Path) -> Path | None:
        found = checked(raw, root)
        (workspace / "notes.txt").unlink()
        os.mkfifo(workspace / "notes.txt")
        return found

    monkeypatch.setattr(attachments, "_resolve", swapped)
    expansion = await attachments.expand("@notes.txt", workspace)
    assert expansion.files == [] and len(expansion.refused) == 1
