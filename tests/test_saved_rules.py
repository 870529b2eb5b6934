"""Saving an "allow always" rule to the user's or the project's config: previewed, atomic, never clobbering.

Attacks: a saved rule written through a symbolic link or into a FIFO, a malformed file
overwritten, a project file's approval lost (or gained for content the person never saw).
"""

from __future__ import annotations

import os
import stat
import tomllib
from pathlib import Path

import pytest

from localagent.config import load_settings
from localagent.paths import AppPaths
from localagent.saved_rules import (
    SaveRuleError,
    preview_saved_rule,
    project_config_file,
    save_note,
    save_rule,
    user_config_file,
)
from localagent.workspace_trust import content_digest
from tools.mcp.approvals import ApprovalStore

USER_TEXT = """\
# my settings
[server]
port = 8911  # a free port

[agent]
mode = "ask"
[agent.permissions]
allow = [
    "bash(git status*)",  # safe
]
deny = ["bash(rm -rf*)"]
"""


def allow_of(path: Path) -> list[str]:
    return tomllib.loads(path.read_text())["agent"]["permissions"]["allow"]


def test_helpers_name_the_two_files(tmp_path: Path) -> None:
    paths = AppPaths(config=tmp_path / "c", data=tmp_path / "d", state=tmp_path / "s", cache=tmp_path / "k")
    assert user_config_file(paths) == tmp_path / "c" / "config.toml"
    assert project_config_file(tmp_path) == tmp_path / ".localagent.toml"


def test_the_preview_is_the_diff_that_saving_writes(tmp_path: Path) -> None:
    target = tmp_path / "config.toml"
    target.write_text(USER_TEXT)
    preview = preview_saved_rule("bash(pytest*)", target)
    assert preview.startswith(f"--- {target}\n+++ {target}\n@@")
    added = [line for line in preview.splitlines() if line.startswith("+") and not line.startswith("+++")]
    assert added == ['+    "bash(pytest*)",']
    assert target.read_text() == USER_TEXT  # a preview writes nothing
    save_rule("bash(pytest*)", target)
    text = target.read_text()
    # Comments, order and layout survive; only the rule is new.
    assert text == USER_TEXT.replace("  # safe\n", '  # safe\n    "bash(pytest*)",\n')
    assert allow_of(target) == ["bash(git status*)", "bash(pytest*)"]


def test_a_rule_already_there_changes_nothing(tmp_path: Path) -> None:
    target = tmp_path / "config.toml"
    target.write_text(USER_TEXT)
    before = target.stat().st_mtime_ns
    assert preview_saved_rule("  bash(git status*) ", target) == ""
    save_rule("bash(git status*)", target)
    assert target.read_text() == USER_TEXT and target.stat().st_mtime_ns == before


def test_a_new_file_is_private_and_loads(tmp_path: Path) -> None:
    target = tmp_path / "config" / "config.toml"
    preview = preview_saved_rule("Read(src/**)", target)
    assert preview.startswith("--- /dev/null\n") and '+allow = ["Read(src/**)"]' in preview
    save_rule("Read(src/**)", target)
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert load_settings(target).settings.agent.permissions.allow == ["Read(src/**)"]


def test_an_existing_file_keeps_its_permissions(tmp_path: Path) -> None:
    target = tmp_path / "config.toml"
    target.write_text(USER_TEXT)
    target.chmod(0o640)
    save_rule("view", target)
    assert stat.S_IMODE(target.stat().st_mode) == 0o640


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", ["x"]),
        ('[agent]\nmode = "ask"\n\n[server]\nport = 1\n', ["x"]),
        ('agent.permissions.allow = ["view"]\n', ["view", "x"]),
        ('[agent]\npermissions = { allow = ["view"] }\n', ["view", "x"]),
        ('agent = { mode = "ask" }\n', ["x"]),
    ],
)
def test_any_layout_of_the_section_takes_the_rule(tmp_path: Path, text: str, expected: list[str]) -> None:
    target = tmp_path / "config.toml"
    target.write_text(text)
    rule = "bash(make test:*)"
    save_rule(rule, target)
    assert allow_of(target) == [rule if item == "x" else item for item in expected]
    assert load_settings(target).settings.agent.permissions.allow[-1] == rule


def test_rules_that_would_break_the_config_are_refused(tmp_path: Path) -> None:
    target = tmp_path / "config.toml"
    target.write_text(USER_TEXT)
    for rule in ("bash(ls", "Reed(.env)", ""):
        with pytest.raises(SaveRuleError) as info:
            preview_saved_rule(rule, target)
        # One line for the person; a ValueError, as the TUI's RuleStore protocol expects.
        assert "\n" not in str(info.value) and isinstance(info.value, ValueError)
        with pytest.raises(SaveRuleError):
            save_rule(rule, target)
    assert target.read_text() == USER_TEXT


# -- attacks on the file -----------------------------------------------------------------------


def test_a_symlinked_target_is_refused_and_what_it_points_to_untouched(tmp_path: Path) -> None:
    victim = tmp_path / "bashrc"
    victim.write_text("echo hi\n")
    workspace = tmp_path / "repo"
    workspace.mkdir()
    target = project_config_file(workspace)
    target.symlink_to(victim)
    for attempt in (preview_saved_rule, save_rule):
        with pytest.raises(SaveRuleError, match="symbolic link") as info:
            attempt("bash", target)
        assert "\n" not in str(info.value)
    assert victim.read_text() == "echo hi\n" and target.is_symlink()
    # A dangling link is refused too: saving would create the file it names.
    dangling = tmp_path / "dangling.toml"
    dangling.symlink_to(tmp_path / "nowhere.toml")
    with pytest.raises(SaveRuleError, match="symbolic link"):
        save_rule("bash", dangling)
    assert not (tmp_path / "nowhere.toml").exists()


def test_a_target_that_is_not_a_regular_file_is_refused(tmp_path: Path) -> None:
    directory = tmp_path / "dir.toml"
    directory.mkdir()
    fifo = tmp_path / "fifo.toml"
    os.mkfifo(fifo)
    for target in (directory, fifo):
        with pytest.raises(SaveRuleError, match="not a regular file"):
            save_rule("view", target)  # never blocks on the FIFO
    assert directory.is_dir() and stat.S_ISFIFO(fifo.lstat().st_mode)


@pytest.mark.parametrize(
    "text",
    [
        '[agent\nmode = "ask"\n',  # broken TOML
        '[agent]\nmode = "ask"\nmode = "full-auto"\n',  # a duplicate key
        "[agent]\npermissions = 3\n",
        '[agent.permissions]\nallow = "view"\n',
        "agent = 1\n",
    ],
)
def test_a_malformed_config_is_never_clobbered(tmp_path: Path, text: str) -> None:
    target = tmp_path / "config.toml"
    target.write_text(text)
    with pytest.raises(SaveRuleError) as info:
        save_rule("view", target)
    message = str(info.value)
    assert str(target) in message and "\n" not in message
    assert target.read_text() == text
    assert [p.name for p in tmp_path.iterdir()] == ["config.toml"]  # no temp file left behind


def test_a_file_that_is_not_utf8_is_left_alone(tmp_path: Path) -> None:
    target = tmp_path / "config.toml"
    target.write_bytes(b"# caf\xe9\n")
    with pytest.raises(SaveRuleError, match="not UTF-8"):
        save_rule("view", target)
    assert target.read_bytes() == b"# caf\xe9\n"


def test_a_failed_write_leaves_the_old_file_and_no_temp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "config.toml"
    target.write_text(USER_TEXT)

    def broken(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken)
    with pytest.raises(SaveRuleError, match="No space left"):
        save_rule("view", target)
    assert target.read_text() == USER_TEXT
    assert [p.name for p in tmp_path.iterdir()] == ["config.toml"]


# -- the project file's approval ---------------------------------------------------------------


def _project(tmp_path: Path, text: str | None) -> tuple[Path, Path, ApprovalStore]:
    workspace = tmp_path / "repo"
    workspace.mkdir()
    target = project_config_file(workspace)
    if text is not None:
        target.write_text(text)
    return workspace, target, ApprovalStore(tmp_path / "approvals.json")


PROJECT_TEXT = '[agent]\nmode = "auto-edit"\n[agent.permissions]\nallow = ["bash(make*)"]\n'


def test_an_approved_project_file_stays_approved_with_the_new_rule(tmp_path: Path) -> None:
    workspace, target, store = _project(tmp_path, PROJECT_TEXT)
    store.remember(workspace.resolve(), content_digest(PROJECT_TEXT), True, "config", content=PROJECT_TEXT)
    assert save_note(target, approvals=store) is None
    save_rule("bash(pytest*)", target, approvals=store)
    new_text = target.read_text()
    assert store.decision(workspace.resolve(), content_digest(new_text), "config") is True
    assert store.approved_content(workspace.resolve(), "config") == new_text
    settings = load_settings(tmp_path / "no-user.toml", workspace.resolve(), store).settings
    assert settings.agent.permissions.allow == ["bash(make*)", "bash(pytest*)"]


def test_an_unapproved_project_file_is_not_approved_by_saving(tmp_path: Path) -> None:
    # The repository's own allow rule and mode must not ride in on the person's one rule.
    workspace, target, store = _project(tmp_path, PROJECT_TEXT)
    note = save_note(target, approvals=store)
    assert note is not None and "localagent config approve" in note and "\n" not in note
    save_rule("bash(pytest*)", target, approvals=store)
    assert store.decision(workspace.resolve(), content_digest(target.read_text()), "config") is None
    loaded = load_settings(tmp_path / "no-user.toml", workspace.resolve(), store)
    assert loaded.settings.agent.permissions.allow == [] and loaded.settings.agent.mode == "ask"


def test_a_declined_project_file_stays_declined(tmp_path: Path) -> None:
    workspace, target, store = _project(tmp_path, PROJECT_TEXT)
    store.remember(workspace.resolve(), content_digest(PROJECT_TEXT), False, "config")
    save_rule("bash(pytest*)", target, approvals=store)
    assert store.decision(workspace.resolve(), content_digest(target.read_text()), "config") is None


def test_a_project_file_made_for_the_rule_is_approved(tmp_path: Path) -> None:
    workspace, target, store = _project(tmp_path, None)
    assert save_note(target, approvals=store) is None
    save_rule("bash(pytest*)", target, approvals=store)
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    settings = load_settings(tmp_path / "no-user.toml", workspace.resolve(), store).settings
    assert settings.agent.permissions.allow == ["bash(pytest*)"]


def test_the_user_file_touches_no_approval(tmp_path: Path) -> None:
    store = ApprovalStore(tmp_path / "approvals.json")
    target = tmp_path / "config.toml"
    assert save_note(target, approvals=store) is None
    save_rule("view", target, approvals=store)
    assert not store.path.exists()


def test_the_default_store_is_the_app_s(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOCALAGENT_HOME", str(tmp_path / "home"))
    from localagent.context import approval_store
    from localagent.paths import app_paths

    workspace, target, _ = _project(tmp_path, PROJECT_TEXT)
    store = approval_store(app_paths())
    store.remember(workspace.resolve(), content_digest(PROJECT_TEXT), True, "config", content=PROJECT_TEXT)
    save_rule("view", target)
    assert store.decision(workspace.resolve(), content_digest(target.read_text()), "config") is True


def test_a_link_swapped_in_while_saving_is_replaced_not_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from localagent import saved_rules

    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    target = tmp_path / "config.toml"
    target.write_text(USER_TEXT)
    real_mkstemp = saved_rules.tempfile.mkstemp

    def racing_mkstemp(**kwargs: str) -> tuple[int, str]:
        made = real_mkstemp(**kwargs)
        target.unlink()
        target.symlink_to(victim)  # the attacker's move, after every check
        return made

    monkeypatch.setattr(saved_rules.tempfile, "mkstemp", racing_mkstemp)
    save_rule("view", target)
    assert victim.read_text() == "precious\n"
    assert not target.is_symlink() and "view" in allow_of(target)


def test_an_approved_crlf_project_file_stays_approved(tmp_path: Path) -> None:
    # The loader reads the file with newlines normalised; saving must digest it the same way.
    crlf = PROJECT_TEXT.replace("\n", "\r\n")
    workspace, target, store = _project(tmp_path, None)
    target.write_bytes(crlf.encode())
    loaded_text = target.read_text()  # what the loader and `config approve` digest
    store.remember(workspace.resolve(), content_digest(loaded_text), True, "config", content=loaded_text)
    assert load_settings(tmp_path / "no-user.toml", workspace.resolve(), store).settings.agent.mode == "auto-edit"
    assert save_note(target, approvals=store) is None
    save_rule("bash(pytest*)", target, approvals=store)
    assert b"\r\n" in target.read_bytes()
    loaded = load_settings(tmp_path / "no-user.toml", workspace.resolve(), store)
    assert loaded.notices == [] and loaded.settings.agent.mode == "auto-edit"
    assert loaded.settings.agent.permissions.allow == ["bash(make*)", "bash(pytest*)"]
