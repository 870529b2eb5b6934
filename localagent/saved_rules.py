"""Save an "allow always" rule to the user's or the project's config, shown first as a diff.

The rule goes into `[agent.permissions] allow` of the chosen TOML file; tomlkit edits the
document in place, so comments, order and layout survive. The file is replaced whole (a temp
file renamed over it), so a crash never leaves half a file, and is never written through a
symbolic link, into something that is not a regular file, or over a file that is not valid TOML.

A project's `.localagent.toml` applies whole only while its exact content is approved (see
`workspace_trust`). Adding the rule the person chose keeps an approved file approved: the new
content is approved in its place. A file this creates holds only that rule and is approved too.
An existing file that was not approved stays so, and its allow rules, the new one included, are
ignored until `localagent config approve` (`save_note` says so before saving).
"""

from __future__ import annotations

import difflib
import os
import stat
import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomlkit
from tomlkit.exceptions import TOMLKitError

from agent.permissions import PermissionConfigError, Rule, check_rule_name
from localagent.config import PROJECT_FILE, project_file
from localagent.context import approval_store
from localagent.errors import ConfigError
from localagent.paths import AppPaths, app_paths
from localagent.workspace_trust import file_digest
from server.toml_tables import child_table
from tools.mcp.approvals import ApprovalStore
from tools.regular_files import NotRegularFile, read_regular_file

__all__ = [
    "SaveRuleError",
    "preview_saved_rule",
    "project_config_file",
    "save_note",
    "save_rule",
    "user_config_file",
]

_APPROVAL_KIND = "config"
_NEW_FILE_MODE = 0o600
_NEW_DIRECTORY_MODE = 0o700


class SaveRuleError(ConfigError, ValueError):
    """The rule cannot be saved there; one line for the person saying why. A ValueError too, as
    the TUI's RuleStore protocol (tui/runtime.py) expects of a refusal."""


def user_config_file(paths: AppPaths) -> Path:
    """The user's own config.toml."""
    return paths.user_config_file


def project_config_file(workspace: Path) -> Path:
    """The workspace's `.localagent.toml`."""
    return project_file(workspace)


def preview_saved_rule(rule: str, target: Path) -> str:
    """A unified diff of `target` before and after adding `rule`; "" when the rule is there already."""
    before, after = _with_rule(rule, target)
    if after is None:
        return ""
    old_name = str(target) if before is not None else "/dev/null"
    lines = difflib.unified_diff((before or "").splitlines(), after.splitlines(), old_name, str(target), lineterm="")
    return "\n".join(lines) + "\n"


def save_rule(rule: str, target: Path, *, approvals: ApprovalStore | None = None) -> None:
    """Add `rule` to `[agent.permissions] allow` in `target`, keeping a project file's approval.

    `approvals` is where workspace file approvals are kept (the app's store when left out).
    """
    before, after = _with_rule(rule, target)
    if after is None:
        return
    store = _approvals_for(target, approvals)
    was_approved = store is not None and (
        before is None or store.decision(_workspace_of(target), file_digest(before), _APPROVAL_KIND) is True
    )
    _replace(target, before, after)
    if store is not None and was_approved:
        try:
            store.remember(_workspace_of(target), file_digest(after), True, _APPROVAL_KIND, content=after)
        except OSError as exc:
            raise SaveRuleError(
                f"saved the rule to {target}, but could not keep the file approved ({exc.strerror}); "
                "approve it again with `localagent config approve`"
            ) from None


def save_note(target: Path, *, approvals: ApprovalStore | None = None) -> str | None:
    """One line for the person when a rule saved there would not apply yet, else None."""
    store = _approvals_for(target, approvals)
    if store is None:
        return None
    text = _read(target)
    if text is None or store.decision(_workspace_of(target), file_digest(text), _APPROVAL_KIND) is True:
        return None
    return (
        f"{target.name} is not approved, so its allow rules (this one too) are ignored until you run "
        "`localagent config approve`"
    )


# -- the edit ---------------------------------------------------------------------------------


def _with_rule(rule: str, target: Path) -> tuple[str | None, str | None]:
    """The file's text now (None: no file) and with the rule added (None: nothing to add)."""
    text = _checked_rule(rule)
    before = _read(target)
    source = before or ""
    try:
        tomllib.loads(source)
        document = tomlkit.parse(source)
    except (tomllib.TOMLDecodeError, TOMLKitError) as exc:
        raise SaveRuleError(f"{target}: not valid TOML ({exc}); fix it before saving a rule into it") from None
    except RecursionError:
        raise SaveRuleError(f"{target}: nested too deeply to read; fix it before saving a rule into it") from None
    allow = _allow_list(document, target)
    if text in allow:
        return before, None
    allow.append(text)
    after = tomlkit.dumps(document)
    if after.endswith("\n\n") and not source.endswith("\n\n"):
        after = after[:-1]  # the new table came last: no blank line the file did not have
    # What is written must load as the settings read it.
    try:
        tomllib.loads(after)
    except tomllib.TOMLDecodeError as exc:  # pragma: no cover - tomlkit writes valid TOML
        raise SaveRuleError(f"{target}: adding the rule would not give valid TOML ({exc})") from None
    return before, after


def _checked_rule(rule: str) -> str:
    try:
        parsed = Rule.parse(rule)
        check_rule_name(parsed)
    except PermissionConfigError as exc:
        raise SaveRuleError(str(exc)) from None
    return parsed.text


def _allow_list(document: Any, target: Path) -> Any:
    """`agent.permissions.allow` in the document, made where it is missing."""
    agent = _table(document, _top_level_key(document, "agent"), target, "agent", super_table=True)
    new_table = "permissions" not in agent and not isinstance(agent, tomlkit.items.InlineTable)
    permissions = _table(agent, "permissions", target, "agent.permissions")
    if "allow" not in permissions:
        permissions["allow"] = tomlkit.array()
    if new_table:
        # A blank line after it, as between the tables around it.
        permissions.add(tomlkit.nl())
    allow = permissions["allow"]
    if not isinstance(allow, list) or not all(isinstance(item, str) for item in allow):
        raise SaveRuleError(f"{target}: agent.permissions.allow is not a list of rules; fix it before saving into it")
    return allow


def _top_level_key(document: Any, name: str) -> str:
    # The settings loader matches top-level names in any case ([AGENT] is [agent]).
    return next((key for key in document if isinstance(key, str) and key.lower() == name), name)


def _table(parent: Any, key: str, target: Path, dotted: str, super_table: bool = False) -> Any:
    table = child_table(parent, key, super_table=super_table)
    if table is None:
        raise SaveRuleError(f"{target}: {dotted} is not a table; fix it before saving into it")
    return table


# -- the file ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Existing:
    text: str
    mode: int


def _read(target: Path) -> str | None:
    existing = _open_existing(target)
    return None if existing is None else existing.text


def _open_existing(target: Path) -> _Existing | None:
    """The file's text and permission bits; None when there is none. Never follows a link."""
    try:
        info = os.lstat(target)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise SaveRuleError(f"{target}: cannot read it ({exc.strerror})") from None
    _refuse_odd(target, info.st_mode)
    try:
        # A link or a FIFO swapped in since lstat is refused, not followed or waited on.
        read = read_regular_file(target)
    except NotRegularFile:
        raise SaveRuleError(f"{target} is not a regular file; localagent saves rules only into one") from None
    except OSError as exc:
        raise SaveRuleError(f"{target}: cannot read it ({exc.strerror}); nothing was saved") from None
    try:
        return _Existing(read.data.decode("utf-8"), stat.S_IMODE(read.mode))
    except UnicodeDecodeError:
        raise SaveRuleError(f"{target}: not UTF-8 text; fix it before saving a rule into it") from None


def _refuse_odd(target: Path, mode: int) -> None:
    if stat.S_ISLNK(mode):
        raise SaveRuleError(f"{target} is a symbolic link; localagent saves rules only into a regular file")
    if not stat.S_ISREG(mode):
        raise SaveRuleError(f"{target} is not a regular file; localagent saves rules only into one")


def _replace(target: Path, before: str | None, after: str) -> None:
    """Write `after` in place of `before`, whole: a temp file beside it, renamed over it."""
    existing = _open_existing(target)
    if (existing.text if existing is not None else None) != before:
        raise SaveRuleError(f"{target} changed while the rule was being saved; nothing was saved, try again")
    mode = existing.mode if existing is not None else _NEW_FILE_MODE
    try:
        target.parent.mkdir(mode=_NEW_DIRECTORY_MODE, parents=True, exist_ok=True)
        fd, temp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".saving")
    except OSError as exc:
        raise SaveRuleError(f"{target}: cannot write beside it ({exc.strerror}); nothing was saved") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            os.fchmod(handle.fileno(), mode)
            handle.write(after)
            handle.flush()
            os.fsync(handle.fileno())
        # A rename replaces the directory entry itself: a link put there since is replaced, not followed.
        os.replace(temp, target)
    except OSError as exc:
        Path(temp).unlink(missing_ok=True)
        raise SaveRuleError(f"{target}: cannot write it ({exc.strerror}); nothing was saved") from None
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


# -- the project file's approval --------------------------------------------------------------


def _approvals_for(target: Path, approvals: ApprovalStore | None) -> ApprovalStore | None:
    """The approval store when `target` is a workspace's `.localagent.toml`, else None."""
    if target.name != PROJECT_FILE:
        return None
    return approvals if approvals is not None else approval_store(app_paths())


def _workspace_of(target: Path) -> Path:
    # Approvals are kept per resolved workspace, as the settings loader looks them up.
    return target.parent.resolve()


@dataclass(frozen=True)
class ConfigRuleStore:
    """The user's and the workspace's config files as places to save an "allow always" rule: what
    a front end (the TUI's approval modal) offers, previews and writes through."""

    user_file: Path
    project_file: Path
    approvals: ApprovalStore

    @classmethod
    def for_workspace(cls, paths: AppPaths, workspace: Path) -> ConfigRuleStore:
        return cls(user_config_file(paths), project_config_file(workspace), approval_store(paths))

    def rule_targets(self) -> list[tuple[str, Path]]:
        # The label says where the rule holds, as the dialog shows it.
        return [
            ("user config, in every repository", self.user_file),
            ("project config, in this repository only", self.project_file),
        ]

    def preview_rule(self, rule: str, target: Path) -> str:
        return preview_saved_rule(rule, target)

    def rule_note(self, target: Path) -> str | None:
        return save_note(target, approvals=self.approvals)

    def save_rule(self, rule: str, target: Path) -> None:
        save_rule(rule, target, approvals=self.approvals)
