"""The checked-in reference pages are what the code says now, and every field has words."""

from __future__ import annotations

from pathlib import Path

import pytest

from localagent.config import AgentSettings, PermissionSettings, ServerSettings
from localagent.reference_docs import reference_pages, undocumented_fields
from server.profiles import ModelSource, Profile, Sampling, Speculative

REFERENCE_DIR = Path(__file__).resolve().parent.parent / "docs" / "reference"
PAGES = reference_pages()


@pytest.mark.parametrize("name", sorted(PAGES))
def test_the_checked_in_reference_page_matches_the_code(name: str) -> None:
    checked_in = (REFERENCE_DIR / name).read_text(encoding="utf-8")
    assert checked_in == PAGES[name], f"docs/reference/{name} is out of date: run python scripts/gen_docs.py"


def test_every_profile_and_settings_field_says_what_it_does() -> None:
    models = (Profile, ModelSource, Speculative, Sampling, ServerSettings, AgentSettings, PermissionSettings)
    assert undocumented_fields(*models) == []


def test_the_references_name_what_the_code_has() -> None:
    assert "## localagent server start" in PAGES["cli.md"]
    assert "| `cache_ram` |" in PAGES["profiles.md"] and "`gemma4-31b-dflash`" in PAGES["profiles.md"]
    assert "`LOCALAGENT_SERVER__PORT`" in PAGES["config.md"]
