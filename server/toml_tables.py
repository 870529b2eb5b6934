"""Writing a setting into a person's TOML file in place (tomlkit keeps comments and layout)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import tomlkit


def child_table(parent: Any, key: str, *, super_table: bool = False) -> Any | None:
    """``parent[key]`` as a table, made when missing; None when it holds something else.

    Inside an inline table (``agent = { ... }``) only an inline table fits, so one is made there."""
    if key not in parent:
        inline = isinstance(parent, tomlkit.items.InlineTable)
        parent[key] = tomlkit.inline_table() if inline else tomlkit.table(is_super_table=super_table)
    table = parent[key]
    return table if isinstance(table, Mapping) else None
