"""The shape of the house: imports point one way (localagent > tui > agent | server > tools, with
the agent core and the server siblings that never import each other), no package has an import
cycle, agent/'s rooms are entered through their face, modules stay small and functions short
unless a comment says why.

The import contracts live in pyproject.toml ([tool.importlinter]) and are checked by import-linter,
which reads every import statement, the ones inside functions included.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("localagent", "tui", "agent", "server", "tools")
MAX_MODULE_LINES = 420
MAX_FUNCTION_LINES = 60
# A longer function says why on the line above its `def` (or its decorators).
LONG_FUNCTION_MARK = "# long:"


def lint_imports(cwd: Path) -> subprocess.CompletedProcess[str]:
    executable = Path(sys.executable).with_name("lint-imports")
    return subprocess.run(
        [str(executable), "--no-cache"], cwd=cwd, capture_output=True, text=True, timeout=240, check=False
    )


def python_files() -> list[Path]:
    return sorted(path for package in PACKAGES for path in (ROOT / package).rglob("*.py"))


def test_import_contracts_hold() -> None:
    result = lint_imports(ROOT)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "2 kept, 0 broken" in result.stdout


@pytest.mark.parametrize(
    ("importer", "line", "broken"),
    [
        ("tools/__init__.py", "import localagent.cli", "tools is not allowed to import localagent"),
        ("agent/events.py", "from tui import app", "agent is not allowed to import tui"),
        ("server/errors.py", "import server.manager", "No cycles are allowed in server"),
        ("agent/events.py", "import server.manager", "agent is not allowed to import server"),
        ("server/errors.py", "import agent.events", "server is not allowed to import agent"),
    ],
)
def test_contracts_catch_an_import_the_wrong_way(tmp_path: Path, importer: str, line: str, broken: str) -> None:
    for package in PACKAGES:
        shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    target = tmp_path / importer
    target.write_text(target.read_text(encoding="utf-8") + f"\n{line}\n", encoding="utf-8")
    result = lint_imports(tmp_path)
    assert result.returncode != 0 and broken in result.stdout, result.stdout[-4000:]


AGENT_ROOMS = ("permissions", "toolcalls", "sessions", "checkpoints")


def room_entered_from_outside(importer: str, imported: str) -> bool:
    """True when ``importer`` reaches past a room's face (``agent.<room>``) into one of its modules."""
    parts = imported.split(".")
    if len(parts) < 3 or parts[0] != "agent" or parts[1] not in AGENT_ROOMS:
        return False
    return not importer.startswith(f"agent.{parts[1]}.") and importer != f"agent.{parts[1]}"


def imports_of(path: Path) -> list[str]:
    names = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
        elif isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
    return names


def module_name(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")


def test_agent_rooms_are_entered_through_their_face() -> None:
    reaching_in = [
        f"{module_name(path)} imports {imported}"
        for path in python_files()
        for imported in imports_of(path)
        if room_entered_from_outside(module_name(path), imported)
    ]
    assert reaching_in == []


def test_the_face_rule_can_fail() -> None:
    assert room_entered_from_outside("agent.loop", "agent.permissions.engine")
    assert room_entered_from_outside("tui.commands", "agent.permissions.shell.words")
    assert not room_entered_from_outside("agent.permissions.engine", "agent.permissions.shell.commands")
    assert not room_entered_from_outside("agent.loop", "agent.permissions")


def test_modules_stay_small() -> None:
    long = [
        f"{p.relative_to(ROOT)}: {n}"
        for p in python_files()
        if (n := len(p.read_text().splitlines())) > MAX_MODULE_LINES
    ]
    assert long == []


def test_long_functions_say_why() -> None:
    unexplained = []
    for path in python_files():
        lines = path.read_text(encoding="utf-8").splitlines()
        for node in ast.walk(ast.parse("\n".join(lines))):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            if node.end_lineno is None or node.end_lineno - node.lineno + 1 <= MAX_FUNCTION_LINES:
                continue
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            above = lines[first - 2].strip() if first >= 2 else ""
            if not above.startswith(LONG_FUNCTION_MARK):
                unexplained.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}")
    assert unexplained == []
