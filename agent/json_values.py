"""Values made safe to keep: what goes into the history and the session file must encode as
UTF-8 and as JSON, whatever a model or a tool produced."""

from __future__ import annotations

import json
from typing import Any


def valid_unicode(value: Any) -> Any:
    """``value`` with unpaired surrogates replaced, in strings and inside lists and dicts."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
            return value
        except UnicodeEncodeError:
            return value.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    if isinstance(value, dict):
        return {key: valid_unicode(item) for key, item in value.items()}
    if isinstance(value, list):
        return [valid_unicode(item) for item in value]
    return value


def jsonable(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` as JSON would give it back (anything else as its text)."""
    return json.loads(json.dumps(data, default=str))
