"""A tool's JSON schema in the plain form chat templates can render.

Templates turn the ``tools`` list into text the model reads, and most render only ``type``,
``description``, ``properties``, ``required``, ``items``, ``enum`` and ``nullable`` (Gemma 4's
template drops everything else). MCP servers generated from type hints send more: ``$ref`` into
``$defs`` for nested models, and ``anyOf: [X, {"type": "null"}]`` for optional fields; rendered
as they are, the model sees a property without a type, or nothing at all. Here references are
inlined and the optional types of properties that are not required folded into ``nullable``
(omitting such a property says what null says). The arguments are still validated against the
tool's own schema.
"""

from __future__ import annotations

from typing import Any


def declared_schema(schema: dict[str, Any]) -> dict[str, Any]:
    definitions: dict[str, Any] = {}
    for key in ("$defs", "definitions"):
        if isinstance(schema.get(key), dict):
            definitions.update({f"#/{key}/{name}": value for name, value in schema[key].items()})
    plain = _plain(schema, definitions, ())
    return plain if isinstance(plain, dict) else {"type": "object", "properties": {}}


def _plain(node: Any, definitions: dict[str, Any], expanding: tuple[str, ...], optional: bool = False) -> Any:
    """``expanding``: the references being inlined above this node; one met again is a cycle, and
    stops there as a plain object. ``optional``: a property the parent does not require."""
    if isinstance(node, list):
        return [_plain(item, definitions, expanding) for item in node]
    if not isinstance(node, dict):
        return node
    if optional:
        node = _fold_optional(node)
    ref = node.get("$ref")
    if isinstance(ref, str) and ref in definitions:
        if ref in expanding:
            return {"type": "object"}
        # Keywords beside the reference (a description, nullable) describe this use of it.
        beside = {k: v for k, v in node.items() if k != "$ref"}
        return _plain({**definitions[ref], **beside}, definitions, (*expanding, ref))
    required = set(node.get("required") or []) if isinstance(node.get("required"), list) else set()
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in ("$defs", "definitions"):
            continue
        if key == "properties" and isinstance(value, dict):
            out[key] = {
                name: _plain(sub, definitions, expanding, optional=name not in required) for name, sub in value.items()
            }
        else:
            out[key] = _plain(value, definitions, expanding)
    return out


def _fold_optional(node: dict[str, Any]) -> dict[str, Any]:
    """``anyOf``/``oneOf`` of one schema and null, or ``type: [X, "null"]``, as X with ``nullable``.
    Only for a property the parent does not require: leaving it out then says what null says, so
    a server that builds a grammar from the schema (and knows no ``nullable``) loses nothing."""
    for key in ("anyOf", "oneOf"):
        options = node.get(key)
        if not isinstance(options, list):
            continue
        kept = [o for o in options if not (isinstance(o, dict) and o.get("type") == "null")]
        if len(kept) == 1 and len(kept) < len(options) and isinstance(kept[0], dict):
            rest = {k: v for k, v in node.items() if k != key}
            return {**kept[0], **rest, "nullable": True}
    kind = node.get("type")
    if isinstance(kind, list) and "null" in kind:
        others = [k for k in kind if k != "null"]
        if len(others) == 1:
            return {**node, "type": others[0], "nullable": True}
    return node
