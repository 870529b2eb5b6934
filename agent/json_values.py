"""Values made safe to keep: what goes into the history and the session file must encode as
UTF-8 and as JSON, whatever a model or a tool produced."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any


def map_strings(value: Any, change: Callable[[str], str]) -> Any:
    """``value`` with ``change`` applied to every string in it, inside lists and dicts too (the
    keys stay as they are)."""
    if isinstance(value, str):
        return change(value)
    if isinstance(value, dict):
        return {key: map_strings(item, change) for key, item in value.items()}
    if isinstance(value, list):
        return [map_strings(item, change) for item in value]
    return value


def valid_text(text: str) -> str:
    """``text`` with unpaired surrogates replaced: it has a UTF-8 form."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


def jsonable(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` as JSON would give it back (anything else as its text)."""
    return json.loads(json.dumps(data, default=str))
