"""The engines a profile can run on, one module each, and what the rest of localagent asks of one.

Adding an engine is a module here with its ``Engine`` (or ``LaunchedEngine``) value, its line in
``ENGINES`` below, and its name in the profiles' ``engine`` field (``server.profiles.EngineName``).
"""

from __future__ import annotations

from server.argv import LaunchPlan
from server.engines.base import Engine, LaunchedEngine
from server.engines.launch_common import launch_plan, model_argument
from server.engines.llama_cpp import LLAMA_CPP
from server.engines.sglang import SGLANG
from server.engines.vllm import VLLM
from server.errors import StartError
from server.profiles import Profile

ENGINES: dict[str, Engine] = {engine.key: engine for engine in (LLAMA_CPP, VLLM, SGLANG)}

__all__ = [
    "ENGINES",
    "LLAMA_CPP",
    "SGLANG",
    "VLLM",
    "Engine",
    "EngineMissing",
    "LaunchedEngine",
    "display_name",
    "engine_model",
    "engine_named",
    "engine_plan",
    "launched_engine",
    "require_engine",
]


class EngineMissing(StartError):
    """The profile's engine is not installed where localagent can run it."""


def engine_named(key: str) -> Engine:
    """The engine of a profile or a /metrics page; llama-server for a name no engine has."""
    return ENGINES.get(key, LLAMA_CPP)


def display_name(key: str) -> str:
    engine = ENGINES.get(key)
    return engine.display_name if engine is not None else key


def launched_engine(profile: Profile) -> LaunchedEngine | None:
    """The engine the user installs that runs ``profile``; None for llama-server, which localagent runs."""
    engine = ENGINES[profile.engine]
    return engine if isinstance(engine, LaunchedEngine) else None


def engine_plan(
    profile: Profile,
    *,
    host: str | None = None,
    port: int | None = None,
    api_key: str | None = None,
    launcher: tuple[str, ...] | None = None,
) -> LaunchPlan:
    """The launch command of a vLLM or SGLang profile. ``launcher`` None: as printed for the user."""
    engine = launched_engine(profile)
    assert engine is not None, "llama-server's plan is server.argv's"
    return launch_plan(engine, profile, host=host, port=port, api_key=api_key, launcher=launcher)


def engine_model(profile: Profile) -> str:
    """The model as the engine names it (its repository or directory), as /v1/models lists it."""
    return profile.model_id or model_argument(profile.model)


def require_engine(profile: Profile) -> tuple[str, ...]:
    """The installed launcher, or EngineMissing saying what to install."""
    engine = launched_engine(profile)
    assert engine is not None, "llama-server is found as a binary (server.binary)"
    launcher = engine.installed_launcher()
    if launcher is None:
        raise EngineMissing(
            f"profile {profile.name!r} runs on {engine.display_name}, which is not installed here; install it with "
            f"{engine.install} on a machine with the GPUs, or print the command with `localagent server cmd {profile.name}`"
        )
    return launcher
