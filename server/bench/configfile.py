"""Write settings into one profile of the user's config.toml, keeping everything else as it was.

tomlkit edits the document in place, so the user's comments, order and layout survive.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import tomlkit
from tomlkit.exceptions import TOMLKitError

from server.errors import BenchInputError, ProfileError
from server.profile_loading import load_profiles
from server.profiles import BUILTIN_PROFILES
from server.toml_tables import child_table


def save_profile_settings(config_file: Path, name: str, section: str, values: Mapping[str, Any]) -> str:
    """Set ``[profiles.NAME.SECTION]`` keys in the user config; returns a sentence saying what was written.

    A built-in profile the user has not customised becomes ``[profiles.NAME]`` with
    ``extends = "NAME"``, so it keeps everything else from the built-in one.
    """
    try:
        text = config_file.read_text(encoding="utf-8")
    except FileNotFoundError:
        text = ""
    except OSError as exc:
        raise BenchInputError(f"{config_file}: cannot read it ({exc.strerror})") from None
    try:
        document = tomlkit.parse(text)
    except TOMLKitError as exc:
        raise BenchInputError(f"{config_file}: not valid TOML ({exc}); fix it before saving into it") from None

    profiles = _table(document, "profiles", config_file, "profiles", super_table=True)
    if name not in profiles and name not in BUILTIN_PROFILES:
        raise BenchInputError(
            f"profile {name!r} is not defined in {config_file}; --save writes only there, so add the "
            "profile to that file (or save from a built-in profile)"
        )
    if name not in profiles:
        profiles[name] = tomlkit.table()
        profiles[name]["extends"] = name
    profile = _table(profiles, name, config_file, f"profiles.{name}")
    target = _table(profile, section, config_file, f"profiles.{name}.{section}")
    for key, value in values.items():
        target[key] = value

    # The saved profile must load, or every later command would fail on the user's config.
    try:
        load_profiles(document.unwrap().get("profiles", {}), origin=str(config_file))
    except ProfileError as exc:
        raise BenchInputError(f"not saved: {exc}") from None
    config_file.parent.mkdir(parents=True, exist_ok=True)
    partial = config_file.with_name(config_file.name + ".partial")
    partial.write_text(tomlkit.dumps(document), encoding="utf-8")
    os.replace(partial, config_file)
    shown = ", ".join(f"{key} = {tomlkit.item(value).as_string()}" for key, value in values.items())
    return f"wrote [profiles.{name}.{section}] {shown} to {config_file}"


def _table(parent: Any, key: str, config_file: Path, dotted: str, super_table: bool = False) -> Any:
    table = child_table(parent, key, super_table=super_table)
    if table is None:
        raise BenchInputError(f"{config_file}: {dotted} is not a table; fix it before saving into it")
    return table
