"""What the launch commands of the engines the user installs share: the model as the engine names
it, GPUs and context in each engine's words, the settings that are llama-server's only, and the
plan with its warnings."""

from __future__ import annotations

import subprocess

from server.argv import DEFAULT_HOST, DEFAULT_PORT, LaunchPlan
from server.engines.base import LaunchedEngine
from server.exposure import is_loopback
from server.profiles import ModelSource, Profile

# Drafted tokens per step when the profile leaves n_max unset: DFlash drafts a block of 16 after
# the anchor token (vLLM counts the 15 drafted, SGLang the whole block).
DFLASH_BLOCK = 16
# Fields only llama-server reads: set on an engine profile, they are named as not applying.
LLAMA_ONLY_FIELDS = (
    "gpu_layers",
    "batch_size",
    "ubatch_size",
    "threads",
    "flash_attn",
    "cache_type_k",
    "cache_type_v",
    "kv_unified",
    "swa_full",
    "no_host",
    "cache_ram",
    "mlock",
    "chat_template_file",
    "reasoning",
)


def launch_plan(
    engine: LaunchedEngine,
    profile: Profile,
    *,
    host: str | None = None,
    port: int | None = None,
    api_key: str | None = None,
    launcher: tuple[str, ...] | None = None,
) -> LaunchPlan:
    """The launch command of ``profile`` on ``engine``. ``launcher`` None: as printed for the user."""
    host = host or profile.host or DEFAULT_HOST
    port = port or profile.port or DEFAULT_PORT
    command = engine.command(profile, list(launcher or engine.shown_launcher), host, port, api_key)
    notes = [*_ignored_settings(profile), *command.notes]
    if not is_loopback(host):
        notes.append(
            f"warning: listening on {host} exposes {engine.display_name} to your network; use 127.0.0.1 unless "
            "you mean to share it (and then set an api_key)"
        )
    return LaunchPlan(
        argv=[*command.argv, *profile.extra_args],
        host=host,
        port=port,
        notes=notes,
        env=command.env,
        program=engine.display_name,
        readiness="http",
        cwd="/",
    )


def model_argument(source: ModelSource | None) -> str:
    assert source is not None and (source.hf or source.path) is not None  # Profile validates engine models
    if source.path is not None:
        return str(source.path.expanduser().resolve())  # the engine runs from "/", not from here
    return str(source.hf)


def size_options(profile: Profile, tp_flag: str, ctx_flag: str) -> list[str]:
    """GPUs, context and the served name, in the engine's own words."""
    options: list[str] = []
    if profile.tensor_parallel:
        options += [tp_flag, str(profile.tensor_parallel)]
    if profile.ctx_size:
        options += [ctx_flag, str(profile.ctx_size)]
    if profile.model_id:
        options += ["--served-model-name", profile.model_id]
    return options


def has_module(python: str, module: str) -> bool:
    """Asked from "/", as the engine will run: from here, a folder of that name would count."""
    probe = f"import importlib.util, sys; sys.exit(importlib.util.find_spec({module!r}) is None)"
    try:
        done = subprocess.run([python, "-c", probe], capture_output=True, timeout=30, check=False, cwd="/")
        return done.returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def _ignored_settings(profile: Profile) -> list[str]:
    ignored = [name for name in LLAMA_ONLY_FIELDS if name in profile.model_fields_set]
    if not ignored:
        return []
    return [f"note: {', '.join(ignored)} are llama-server settings and do not apply to a {profile.engine} profile"]
