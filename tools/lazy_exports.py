"""Package faces that import a module only when one of its names is first used.

`tools` and `tools.mcp` re-export their public names, but importing `tools.safe_env` must not
pull in every tool (jsonschema) or `tools.mcp.approvals` the MCP client (the `mcp` package): every
`localagent` command would pay for them at start-up.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(package: str, exports: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """`__getattr__` and `__dir__` for a package whose names live in `exports` (name -> module)."""
    namespace = importlib.import_module(package).__dict__

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value  # found once, then an ordinary attribute
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *exports})

    return __getattr__, __dir__
