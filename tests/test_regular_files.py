"""read_regular_file: the one way localagent reads a file a workspace can swap (instructions,
task files, config files it saves rules into)."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from tools.regular_files import NotRegularFile, read_regular_file


def test_reads_a_regular_file_up_to_its_limit(tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    path.write_bytes(b"0123456789")
    whole = read_regular_file(path)
    assert (whole.data, whole.unread) == (b"0123456789", 0)
    cut = read_regular_file(path, 4)
    assert (cut.data, cut.unread) == (b"0123", 6)


def test_a_fifo_is_refused_at_once_not_waited_on(tmp_path: Path) -> None:
    fifo = tmp_path / "f"
    os.mkfifo(fifo)
    with pytest.raises(NotRegularFile):
        read_regular_file(fifo)


def test_a_symlink_is_never_followed(tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_text("token")
    link = tmp_path / "link"
    link.symlink_to(secret)
    with pytest.raises(OSError) as refused:
        read_regular_file(link)
    assert refused.value.errno == errno.ELOOP


def test_a_directory_is_not_a_regular_file(tmp_path: Path) -> None:
    with pytest.raises(NotRegularFile):
        read_regular_file(tmp_path)


def test_the_file_tools_refuse_a_symlink_swapped_in_after_their_check(tmp_path: Path, monkeypatch) -> None:
    """The check (exists, is a file) and the read are two steps; a symlink to a secret placed
    between them must not be read through."""
    from tools import text_files
    from tools.base import ToolError

    secret = tmp_path / "secret"
    secret.write_text("token=hunter2\n")
    target = tmp_path / "notes.txt"
    target.write_text("plain\n")

    def swap_after_check(path: Path, shown_as: str) -> None:
        path.unlink()
        path.symlink_to(secret)

    monkeypatch.setattr(text_files, "ensure_regular_file", swap_after_check)
    with pytest.raises(ToolError, match="replaced by a symlink"):
        text_files.TextFile.load(target, "notes.txt")


def test_the_file_tools_refuse_a_fifo_swapped_in_after_their_check(tmp_path: Path, monkeypatch) -> None:
    from tools import text_files
    from tools.base import ToolError

    target = tmp_path / "notes.txt"

    def swap_after_check(path: Path, shown_as: str) -> None:
        os.mkfifo(path)

    monkeypatch.setattr(text_files, "ensure_regular_file", swap_after_check)
    monkeypatch.setattr(
        text_files.Path,
        "stat",
        lambda self: os.stat_result((0o100644, 0, 0, 1, 0, 0, 6, 0, 0, 0)),
    )
    with pytest.raises(ToolError, match="not a regular file"):
        text_files.TextFile.load(target, "notes.txt")
