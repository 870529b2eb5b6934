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
