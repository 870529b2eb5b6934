"""Git that cannot be turned into an executor by the repository it runs in.

A repository's `.git/config` and `.gitattributes` are a stranger's input, and git runs programs
they name: `core.fsmonitor` on nearly every command, hooks (`reference-transaction` fires on
`update-ref`), clean/smudge filters on `add` and checkout, pagers, external diff and textconv,
signing programs. Every git command localagent runs itself goes through ``run_git``, which runs it
with GitPython (``git.Git``, with the caller's settings as persistent ``-c`` options):

- the system and global config are not read (``GIT_CONFIG_NOSYSTEM``, ``GIT_CONFIG_GLOBAL``),
  and variables that inject config or programs (``GIT_CONFIG_COUNT``, ``GIT_EXTERNAL_DIFF``,
  ``GIT_SSH_COMMAND``...) are dropped;
- settings at command-line precedence (which wins over the repository's own) switch off every
  key that names a program, and every filter driver the repository defines is emptied by name.
  They are passed as ``GIT_CONFIG_COUNT``/``GIT_CONFIG_KEY_n``/``GIT_CONFIG_VALUE_n``, not ``-c``:
  a key may itself contain ``=`` (``filter.a=b.clean``), which ``-c key=value`` cannot say;
- git gets the environment without secrets (a filter or helper it still runs learns nothing), and
  every call has a deadline, so a FIFO where a config file should be cannot hang the agent.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tools.program_path import which_absolute
from tools.safe_env import filtered_environment

# Environment that would point git elsewhere, inject config, or name a program to run.
_DROPPED_PREFIXES = ("GIT_CONFIG_", "GIT_TRACE")
_DROPPED = frozenset(
    {
        "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES",
        "GIT_COMMON_DIR", "GIT_NAMESPACE", "GIT_PREFIX", "GIT_CEILING_DIRECTORIES", "GIT_DISCOVERY_ACROSS_FILESYSTEM",
        "GIT_CONFIG", "GIT_CONFIG_PARAMETERS", "GIT_EXTERNAL_DIFF", "GIT_PAGER", "PAGER", "GIT_EDITOR",
        "GIT_SEQUENCE_EDITOR", "GIT_ASKPASS", "SSH_ASKPASS", "GIT_SSH", "GIT_SSH_COMMAND", "GIT_PROXY_COMMAND",
        "GIT_EXEC_PATH", "GIT_TEMPLATE_DIR", "GIT_ATTR_SOURCE",
    }
)  # fmt: skip

# Every key that makes git run something, set to a value that runs nothing.
SAFE_CONFIG: tuple[tuple[str, str], ...] = (
    ("core.fsmonitor", "false"),
    ("core.hooksPath", os.devnull),
    ("core.pager", "cat"),
    ("core.editor", "true"),
    ("core.askPass", ""),
    ("core.sshCommand", "false"),
    ("core.gitProxy", ""),
    ("core.attributesFile", os.devnull),
    ("core.untrackedCache", "false"),
    ("diff.external", ""),
    ("commit.gpgSign", "false"),
    ("tag.gpgSign", "false"),
    ("gpg.program", "false"),
    ("gc.auto", "0"),
    ("maintenance.auto", "false"),
    ("protocol.allow", "never"),
    ("credential.helper", ""),
    ("submodule.recurse", "false"),
    ("uploadpack.packObjectsHook", ""),
)
_FILTER_KEY = re.compile(r"^filter\.(.+)\.(clean|smudge|process|required)$")


GIT_TIMEOUT_SECONDS = 120.0


def git_env(base: Mapping[str, str] | None = None, **extra: str) -> dict[str, str]:
    source = filtered_environment(set(), os.environ if base is None else base)
    env = {k: v for k, v in source.items() if k not in _DROPPED and not k.startswith(_DROPPED_PREFIXES)}
    env.update(
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_TERMINAL_PROMPT="0",
        GIT_NO_REPLACE_OBJECTS="1",
        GIT_OPTIONAL_LOCKS="0",
    )
    env.update(extra)
    return env


def safe_config(names: list[str], work_tree: str | None = None) -> list[tuple[str, str]]:
    """Every executing key switched off, and each named filter driver emptied.

    With `work_tree`, the repository's own `core.worktree` and `core.bare` are overridden too: a
    command run inside the sandbox may have written them, to point git (and so a restore) at a
    tree outside the workspace."""
    entries = list(SAFE_CONFIG)
    if work_tree is not None:
        entries += [("core.worktree", work_tree), ("core.bare", "false")]
    for name in names:
        entries += [(f"filter.{name}.{part}", value) for part, value in _EMPTY_FILTER]
    return entries


_EMPTY_FILTER = (("clean", ""), ("smudge", ""), ("process", ""), ("required", "false"))


def config_environment(entries: list[tuple[str, str]]) -> dict[str, str]:
    env = {"GIT_CONFIG_COUNT": str(len(entries))}
    for index, (key, value) in enumerate(entries):
        env[f"GIT_CONFIG_KEY_{index}"] = key
        env[f"GIT_CONFIG_VALUE_{index}"] = value
    return env


def filter_drivers(cwd: Path, env: Mapping[str, str], timeout: float = 30.0) -> list[str]:
    """Names of the clean/smudge filter drivers the repository's config defines. Reading config
    runs nothing; an unreadable config yields none, and git then refuses the command itself."""
    try:
        done = run_git(
            "config", "--includes", "--name-only", "--get-regexp", r"^filter\.", cwd=cwd, env=env, filters=[],
            timeout=timeout,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return []
    names = []
    for line in os.fsdecode(done.stdout).splitlines():
        match = _FILTER_KEY.match(line.strip())
        if match and match.group(1) not in names:
            names.append(match.group(1))
    return names


def run_git(
    *args: str,
    cwd: Path,
    env: Mapping[str, str],
    filters: list[str] | None = None,
    input: bytes | None = None,
    timeout: float | None = None,
    options: Sequence[tuple[str, str]] = (),
) -> subprocess.CompletedProcess[bytes]:
    """Run hardened git through GitPython: ``git --no-pager [-c KEY=VALUE for options] ARGS``.

    Raises OSError (git missing, or no folder ``cwd``) or subprocess.TimeoutExpired. ``options``
    are the caller's own settings (``core.autocrlf=false``); they go first in the environment's
    settings, so the hardening's, after them, win over them."""
    # Read at call time, so the deadline can be changed for every caller at once.
    timeout = GIT_TIMEOUT_SECONDS if timeout is None else timeout
    names = filter_drivers(cwd, env, min(timeout, 30.0)) if filters is None else filters
    entries = [*options, *safe_config(names, env.get("GIT_WORK_TREE"))]
    if not cwd.is_dir():  # GitPython would run git in this process's folder instead
        raise FileNotFoundError(f"no folder {cwd} to run git in")
    runner = _git_module().Git(cwd)
    runner.set_persistent_git_options(no_pager=True)
    command, *rest = args
    with contextlib.ExitStack() as stack:
        stdin = None
        if input is not None:
            stdin = stack.enter_context(tempfile.TemporaryFile())  # GitPython hands the process a file
            stdin.write(input)
            stdin.seek(0)
        try:
            status, out, err = runner._call_process(
                command,
                *rest,
                env=_exact_environment({**env, **config_environment(entries)}),
                istream=stdin,
                kill_after_timeout=timeout,
                with_extended_output=True,
                with_exceptions=False,
                stdout_as_string=False,
                strip_newline_in_stdout=False,
            )
        except _git_module().GitCommandNotFound as exc:
            raise FileNotFoundError(f"git is not installed: {exc}") from None
    err_bytes = err.encode("utf-8", "replace") if isinstance(err, str) else bytes(err)
    if err_bytes.startswith(_TIMEOUT_MARK):
        raise subprocess.TimeoutExpired(["git", *args], timeout)
    return subprocess.CompletedProcess(["git", *args], status, bytes(out), err_bytes)


# How GitPython reports a command it killed at its deadline (git/cmd.py, Git.execute).
_TIMEOUT_MARK = b"Timeout: the command "


def _exact_environment(env: Mapping[str, str]) -> dict[str, str]:
    """``env``, as GitPython can be told it.

    GitPython builds every command's environment from this process's own (``os.environ``) and
    can only add to it (git/cmd.py, ``Git.execute``): a variable the hardening dropped would
    come back. Git's own variables are gone from this process (``_forget_git_variables``); every
    other variable ``env`` leaves out (an API key, ``PAGER``, ``SSH_ASKPASS``) is set to the empty
    string, which tells a filter or helper nothing and names no program git would run."""
    return {**dict.fromkeys(os.environ, ""), **env}


def _forget_git_variables() -> None:
    """Remove git's variables (``GIT_DIR``, ``GIT_CONFIG``, ``GIT_INDEX_FILE``...) from this
    process's environment. Emptying them is not enough: git reads an empty ``GIT_CONFIG`` or
    ``GIT_INDEX_FILE`` as a file name. They come from a git hook or alias that started
    localagent, and concern that git's repository, never the workspace's; GitPython's own
    (``GIT_PYTHON_*``) stay."""
    for name in [name for name in os.environ if _is_git_variable(name)]:
        os.environ.pop(name, None)


def _is_git_variable(name: str) -> bool:
    return name.startswith("GIT_") and not name.startswith("GIT_PYTHON_")


def _git_module() -> Any:
    """GitPython, imported on first use: it runs ``git version`` when imported, which commands
    that never touch git should not pay for, and a machine without git must still import it."""
    os.environ.setdefault("GIT_PYTHON_REFRESH", "quiet")
    # GitPython runs plain "git" (its import runs `git version` in this process's folder, its
    # commands inside the repository), where an empty or relative PATH entry finds the
    # repository's own `git`: name the one on PATH's absolute entries, unless the person named one.
    if "GIT_PYTHON_GIT_EXECUTABLE" not in os.environ and (found := which_absolute("git")):
        os.environ["GIT_PYTHON_GIT_EXECUTABLE"] = found
    _forget_git_variables()
    import git

    return git
