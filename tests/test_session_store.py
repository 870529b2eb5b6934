"""Session files: JSONL written as events happen, reloaded, resumed and listed."""

from __future__ import annotations

import json
import os
import re
from datetime import datetime
from pathlib import Path

import pytest

from agent.sessions import (
    LIST_HINT,
    SessionError,
    SessionNotFoundError,
    SessionStore,
    new_session_id,
)


@pytest.fixture
def store(tmp_path: Path) -> SessionStore:
    return SessionStore(tmp_path / "sessions")


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path


def set_mtime(path: Path, seconds: int) -> None:
    os.utime(path, (seconds, seconds))


def test_session_ids_sort_by_time_and_look_right() -> None:
    early = new_session_id(datetime(2026, 11, 29, 20, 30, 0))
    late = new_session_id(datetime(2026, 11, 29, 20, 30, 1))
    assert re.fullmatch(r"20261129-203000-[0-9a-f]{6}", early)
    assert early < late


def test_write_and_reload(store: SessionStore, workspace: Path) -> None:
    with store.create(workspace, {"model": "qwen3-4b", "profile": "fast"}) as writer:
        writer.append({"type": "turn_started", "turn": 1, "text": "fix the tests"})
        written = writer.append({"type": "message", "message": {"role": "user", "content": "fix the tests"}})
        writer.append({"type": "turn_finished", "reason": "done"})
    assert "ts" in written

    lines = writer.path.read_text().splitlines()
    assert len(lines) == 4
    assert writer.path.name == f"{writer.session_id}.jsonl"
    assert all(isinstance(json.loads(line), dict) for line in lines)

    header, events = store.open(writer.session_id)
    assert header["session_id"] == writer.session_id
    assert header["workspace"] == str(workspace.resolve())
    assert header["meta"] == {"model": "qwen3-4b", "profile": "fast"}
    assert header["localagent_version"]
    assert header["created"]
    assert [e["type"] for e in events] == ["turn_started", "message", "turn_finished"]
    assert events[1]["message"] == {"role": "user", "content": "fix the tests"}
    assert all("ts" in e for e in events)


def test_each_event_is_on_disk_as_soon_as_it_is_appended(store: SessionStore, workspace: Path) -> None:
    writer = store.create(workspace)
    writer.append({"type": "text_delta", "text": "héllo"})
    # Read back while the writer is still open: nothing may be waiting in a buffer.
    _, events = store.open(writer.session_id)
    assert events[0]["text"] == "héllo"
    writer.close()


def test_partial_last_line_is_ignored_with_a_note(store: SessionStore, workspace: Path) -> None:
    writer = store.create(workspace)
    writer.append({"type": "turn_started", "turn": 1, "text": "hi"})
    writer.close()
    with writer.path.open("ab") as handle:
        handle.write(b'{"type": "message", "message": {"role": "assis')

    loaded = store.open(writer.session_id)
    assert [e["type"] for e in loaded.events] == ["turn_started"]
    assert len(loaded.notes) == 1 and "cut off" in loaded.notes[0]


def test_resume_appends_to_the_same_file_after_cutting_a_partial_line(store: SessionStore, workspace: Path) -> None:
    writer = store.create(workspace)
    writer.append({"type": "turn_started", "turn": 1, "text": "first"})
    writer.close()
    with writer.path.open("ab") as handle:
        handle.write(b'{"type": "mess')

    resumed = store.resume(writer.session_id)
    assert resumed.path == writer.path and resumed.session_id == writer.session_id
    resumed.append({"type": "turn_started", "turn": 2, "text": "second"})
    resumed.close()

    loaded = store.open(writer.session_id)
    assert [e["text"] for e in loaded.events] == ["first", "second"]
    assert loaded.notes == []
    assert len(list(store.directory.glob("*.jsonl"))) == 1


def test_last_is_per_workspace(store: SessionStore, tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    older_a = store.create(a)
    newer_a = store.create(a)
    only_b = store.create(b)
    for writer, when in ((older_a, 1_000), (newer_a, 2_000), (only_b, 3_000)):
        writer.close()
        set_mtime(writer.path, when)

    assert store.open("last", workspace=a).header["session_id"] == newer_a.session_id
    assert store.open("last", workspace=b).header["session_id"] == only_b.session_id
    assert store.open("last").header["session_id"] == only_b.session_id
    assert store.resume("last", workspace=a).session_id == newer_a.session_id


def test_last_without_any_session_names_the_workspace(store: SessionStore, workspace: Path) -> None:
    with pytest.raises(SessionNotFoundError) as info:
        store.open("last", workspace=workspace)
    message = str(info.value)
    assert str(workspace.resolve()) in message and LIST_HINT in message and "\n" not in message


def test_unknown_id_is_a_clear_one_line_error(store: SessionStore, workspace: Path) -> None:
    store.create(workspace).close()
    with pytest.raises(SessionNotFoundError) as info:
        store.open("20990101-000000-ffffff")
    message = str(info.value)
    assert "20990101-000000-ffffff" in message and LIST_HINT in message and "\n" not in message
    with pytest.raises(SessionNotFoundError, match="not a session id"):
        store.resume("../../etc/passwd")


def test_unique_prefix_opens_and_ambiguous_prefix_fails(store: SessionStore, workspace: Path) -> None:
    (store.directory).mkdir(parents=True)
    for name in ("20260101-000000-aaaaaa", "20260101-000000-aabbbb", "20260102-000000-cccccc"):
        header = {"type": "session", "session_id": name, "workspace": str(workspace),
                  "created": "2026-01-01T00:00:00Z", "localagent_version": "0.1.0"}  # fmt: skip
        (store.directory / f"{name}.jsonl").write_text(json.dumps(header) + "\n")
    assert store.open("20260102").header["session_id"] == "20260102-000000-cccccc"
    with pytest.raises(SessionNotFoundError, match="ambiguous"):
        store.open("20260101-000000-aa")


def test_list_is_newest_first_with_summaries(store: SessionStore, tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    first = store.create(a, {"model": "m"})
    first.append({"type": "turn_started", "turn": 1, "text": "  add a   README\nplease "})
    first.append({"type": "turn_finished", "reason": "done"})
    first.append({"type": "turn_started", "turn": 2, "text": "now tests"})
    second = store.create(b)
    third = store.create(a)
    for writer, when in ((first, 3_000), (second, 2_000), (third, 1_000)):
        writer.close()
        set_mtime(writer.path, when)

    everything = store.list()
    assert [s.session_id for s in everything] == [first.session_id, second.session_id, third.session_id]
    top = everything[0]
    assert top.first_user_message == "add a README please"
    assert top.turns == 2
    assert top.updated.timestamp() == 3_000
    assert top.workspace == str(a.resolve())
    assert everything[2].first_user_message is None and everything[2].turns == 0

    assert [s.session_id for s in store.list(workspace=a)] == [first.session_id, third.session_id]


def test_list_skips_files_that_are_not_sessions(store: SessionStore, workspace: Path) -> None:
    store.create(workspace).close()
    (store.directory / "junk.jsonl").write_text("not json\n")
    (store.directory / "empty.jsonl").write_bytes(b"")
    assert len(store.list()) == 1
    with pytest.raises(SessionError, match="not a localagent session file"):
        store.open("junk")


def test_empty_store_lists_nothing(store: SessionStore) -> None:
    assert store.list() == []


def test_bad_events_are_rejected(store: SessionStore, workspace: Path) -> None:
    writer = store.create(workspace)
    with pytest.raises(SessionError, match="need a string 'type'"):
        writer.append({"text": "no type"})
    with pytest.raises(SessionError, match="cannot be saved as JSON"):
        writer.append({"type": "odd", "value": object()})
    writer.close()
    with pytest.raises(SessionError, match="is closed"):
        writer.append({"type": "late"})
    # Nothing half-written was left behind by the failed appends.
    assert store.open(writer.session_id).events == []


def test_corrupt_middle_line_is_skipped_with_a_note(store: SessionStore, workspace: Path) -> None:
    writer = store.create(workspace)
    writer.append({"type": "a"})
    writer.close()
    with writer.path.open("ab") as handle:
        handle.write(b"garbage\n")
    with store.resume(writer.session_id) as again:
        again.append({"type": "b"})
    loaded = store.open(writer.session_id)
    assert [e["type"] for e in loaded.events] == ["a", "b"]
    assert loaded.notes and "line 3" in loaded.notes[0]
