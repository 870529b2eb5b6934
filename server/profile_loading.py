"""Profiles from the user's TOML, merged over the built-in ones (``extends``), and looked up by name."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from server.errors import ProfileError
from server.profiles import BUILTIN_PROFILES, Profile


def load_profiles(user_profiles: dict[str, dict[str, Any]], origin: str = "config") -> dict[str, Profile]:
    """Merge the user's TOML profiles over the built-in ones.

    A user profile may say ``extends = "NAME"`` to start from another profile and change a few
    fields; nested tables (``sampling``, ``speculative``) merge key by key.
    """
    profiles = dict(BUILTIN_PROFILES)
    pending = dict(user_profiles)
    resolving: set[str] = set()

    def resolve(name: str) -> Profile:
        if name in profiles and name not in pending:
            return profiles[name]
        if name in resolving:
            raise ProfileError(f"{origin}: profile {name!r} extends itself through a cycle")
        if name not in pending:
            raise ProfileError(f"{origin}: profile extends unknown profile {name!r}")
        resolving.add(name)
        raw = dict(pending[name])
        base_name = raw.pop("extends", None)
        data: dict[str, Any] = {}
        if base_name is not None:
            base = resolve(str(base_name)) if base_name != name else BUILTIN_PROFILES.get(name)
            if base is None:
                raise ProfileError(f"{origin}: profile {name!r} extends unknown profile {base_name!r}")
            data = base.model_dump(exclude_unset=True, exclude={"name", "description"})
        data = merge_profile(data, raw)
        data["name"] = name
        try:
            profile = Profile.model_validate(data)
        except ValidationError as exc:
            raise ProfileError(f"{origin}: profile {name!r}: {first_error(exc)}") from None
        profiles[name] = profile
        pending.pop(name)
        resolving.discard(name)
        return profile

    for name in list(pending):
        if name in pending:
            resolve(name)
    return profiles


def get_profile(profiles: dict[str, Profile], name: str) -> Profile:
    try:
        return profiles[name]
    except KeyError:
        known = ", ".join(sorted(profiles))
        raise ProfileError(f"unknown profile {name!r}; known profiles: {known}") from None


def first_error(exc: ValidationError) -> str:
    """One line from a pydantic error: the key path and what is wrong with it."""
    error = exc.errors()[0]
    location = ".".join(str(part) for part in error["loc"])
    message = error["msg"].removeprefix("Value error, ")
    return f"{location}: {message}" if location else message


def merge_profile(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """``deep_merge``, except that a model source is one choice: a ``model`` (or ``draft_model``)
    given over a base replaces the base's whole, so ``model = { hf = "..." }`` over a base with
    ``hf_repo`` + ``hf_file`` names one model, not both."""
    merged = deep_merge(base, override)
    if "model" in override:
        merged["model"] = override["model"]
    spec = override.get("speculative")
    if isinstance(spec, dict) and "draft_model" in spec and isinstance(merged.get("speculative"), dict):
        merged["speculative"] = {**merged["speculative"], "draft_model": spec["draft_model"]}
    return merged


def deep_merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged
