"""Write one profile table into the user's config.toml without disturbing anything else in it.

The standard library reads TOML but does not write it, and a full rewrite would drop the user's
comments and layout. So the file is edited as text: the ``[profiles.NAME]`` table (and its
sub-tables) is cut out and written anew at the end, and the result is parsed again and compared
with what was intended before it replaces the file. Anything unexpected leaves the file alone.
"""

from __future__ import annotations

import json
import math
import os
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from localagent.errors import UsageError
from server.profiles import BUILTIN_PROFILES, deep_merge, load_profiles

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def save_profile_settings(config_file: Path, name: str, section: str, values: Mapping[str, Any]) -> str:
    """Set ``[profiles.NAME.SECTION]`` keys in the user config; returns a sentence saying what was written.

    A built-in profile the user has not customised becomes ``[profiles.NAME]`` with
    ``extends = "NAME"``, so it keeps everything else from the built-in one.
    """
    text = _read(config_file)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{config_file}: not valid TOML ({exc}); fix it before saving into it") from None
    profiles = data.get("profiles", {})
    if not isinstance(profiles, dict):
        raise UsageError(f"{config_file}: 'profiles' is not a table; fix it before saving into it")
    existing = profiles.get(name)
    if existing is None:
        if name not in BUILTIN_PROFILES:
            raise UsageError(
                f"profile {name!r} is not defined in {config_file}; --save writes only there, so add the "
                "profile to that file (or save from a built-in profile)"
            )
        existing = {"extends": name}
    if not isinstance(existing, dict):
        raise UsageError(f"{config_file}: profiles.{name} is not a table; fix it before saving into it")
    updated = deep_merge(existing, {section: dict(values)})
    expected = deep_merge(data, {"profiles": {name: updated}})
    expected["profiles"][name] = updated  # replace, not merge: the table is written whole

    remaining = _cut_table(text, ["profiles", name])
    if _normalized(_parse_or_none(remaining)) != _without(data, name):
        raise UsageError(
            f"{config_file}: profiles.{name} is written in a form this command cannot edit safely; "
            f"set these by hand under [profiles.{name}.{section}]: " + _inline(values)
        )
    new_text = remaining.rstrip("\n") + ("\n\n" if remaining.strip() else "") + dump_table(["profiles", name], updated)
    if _normalized(_parse_or_none(new_text)) != _normalized(expected):
        raise UsageError(f"{config_file}: could not write profiles.{name} safely; the file is unchanged")
    # The saved profile must load, or every later command would fail on the user's config.
    load_profiles(expected.get("profiles", {}), origin=str(config_file))
    _write_atomically(config_file, new_text)
    return f"wrote [profiles.{name}.{section}] {_inline(values)} to {config_file}"


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return ""
    except OSError as exc:
        raise UsageError(f"{path}: cannot read it ({exc.strerror})") from None


def _write_atomically(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    partial.write_text(text, encoding="utf-8")
    os.replace(partial, path)


def _parse_or_none(text: str) -> dict[str, Any] | None:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return None


def _without(data: dict[str, Any], name: str) -> dict[str, Any]:
    result = dict(data)
    if isinstance(result.get("profiles"), dict):
        result["profiles"] = {k: v for k, v in result["profiles"].items() if k != name}
    return _normalized(result) or {}


def _normalized(data: dict[str, Any] | None) -> dict[str, Any] | None:
    # [profiles.NAME] alone also creates the [profiles] table; without it, an empty one is the same.
    if data is not None and data.get("profiles") == {}:
        data = {k: v for k, v in data.items() if k != "profiles"}
    return data


def _cut_table(text: str, prefix: list[str]) -> str:
    """The text without the tables whose header key path starts with ``prefix``. Comments and blank
    lines right before the next table stay: they usually describe that table."""
    kept: list[str] = []
    trailing: list[str] = []
    cutting = False
    for line in text.splitlines(keepends=True):
        path = _header_path(line)
        if path is not None:
            now_cutting = path[: len(prefix)] == prefix
            if cutting and not now_cutting:
                kept.extend(trailing)
            trailing = []
            cutting = now_cutting
        if not cutting:
            kept.append(line)
        elif path is None and (not line.strip() or line.lstrip().startswith("#")):
            trailing.append(line)
        else:
            trailing = []
    return "".join(kept)


def _header_path(line: str) -> list[str] | None:
    stripped = line.strip()
    if not stripped.startswith("[") or stripped.startswith("[["):
        return None
    end = _closing_bracket(stripped)
    if end is None:
        return None
    return _split_key(stripped[1:end])


def _closing_bracket(text: str) -> int | None:
    quote: str | None = None
    for i, char in enumerate(text):
        if quote:
            if char == quote:
                quote = None
        elif char in "\"'":
            quote = char
        elif char == "]":
            return i
    return None


def _split_key(key: str) -> list[str]:
    parts: list[str] = []
    current = ""
    quote: str | None = None
    for char in key:
        if quote:
            if char == quote:
                quote = None
            else:
                current += char
        elif char in "\"'":
            quote = char
        elif char == ".":
            parts.append(current.strip())
            current = ""
        else:
            current += char
    parts.append(current.strip())
    return parts


# -- a small TOML writer for the values a profile holds ---------------------------------------------


def dump_table(path: list[str], table: Mapping[str, Any]) -> str:
    lines = [f"[{'.'.join(_key(p) for p in path)}]"]
    subtables: list[tuple[str, Mapping[str, Any]]] = []
    for key, value in table.items():
        if isinstance(value, Mapping):
            subtables.append((key, value))
        else:
            lines.append(f"{_key(key)} = {_value(value)}")
    text = "\n".join(lines) + "\n"
    for key, value in subtables:
        text += "\n" + dump_table([*path, key], value)
    return text


def _key(key: str) -> str:
    return key if _BARE_KEY.match(key) else _string(key)


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_value(item) for item in value) + "]"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items()) + "}"
    raise UsageError(f"cannot write {type(value).__name__} values to TOML")


def _string(text: str) -> str:
    # JSON string escapes are TOML basic-string escapes, except that TOML also forbids DEL raw.
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


def _inline(values: Mapping[str, Any]) -> str:
    return ", ".join(f"{_key(k)} = {_value(v)}" for k, v in values.items())
