"""What users copy from examples/ must work as it is."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from server.argv import ResolvedModels, build_launch_plan
from server.capabilities import parse_help
from server.pinned_binary import PINNED_HELP
from server.profile_loading import load_profiles

ROOT = Path(__file__).resolve().parent.parent
UPSTREAM = parse_help(PINNED_HELP.read_text())


@pytest.mark.parametrize("path", sorted((ROOT / "examples" / "profiles").glob("*.toml")), ids=lambda p: p.name)
def test_example_profiles_load_and_map_onto_upstream(path: Path):
    data = tomllib.loads(path.read_text())
    profiles = load_profiles(data.get("profiles", {}), origin=str(path))
    for name in data.get("profiles", {}):
        plan = build_launch_plan(
            profiles[name], UPSTREAM, Path("llama-server"), ResolvedModels(Path("m.gguf"), Path("d.gguf"))
        )
        assert "--metrics" in plan.argv


@pytest.mark.parametrize("path", sorted((ROOT / "examples" / "tasks").glob("*.md")), ids=lambda p: p.name)
def test_example_tasks_say_how_they_are_checked(path: Path):
    text = path.read_text()
    assert "Return only one complete Python file." in text
    assert "How the result is checked" in text
