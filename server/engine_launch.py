"""vLLM and SGLang profiles: the engine's own launch command, and whether the engine is here.

The option names and values follow each engine's source: vLLM 0.33.0 (``vllm/config/speculative.py``,
``vllm/engine/arg_utils.py``) and SGLang 0.5.23 (``srt/arg_groups/fields/spec.py``,
``srt/arg_groups/speculative_hook.py``). DFlash is ``"method": "dflash"`` in vLLM (from 0.20; the
Gemma 4 draft, with its sliding-window layers, from 0.25) and ``--speculative-algorithm DFLASH`` in
SGLang (from 0.5.11; Gemma 4 targets from 0.5.14).
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass

from server.argv import DEFAULT_HOST, DEFAULT_PORT, LaunchPlan
from server.errors import StartError
from server.exposure import is_loopback
from server.profiles import ModelSource, Profile, Speculative
from tools.program_path import which_absolute

# Drafted tokens per step when the profile leaves n_max unset. DFlash drafts a block of 16 after
# the anchor token (vLLM counts the 15 drafted, SGLang the whole block); vLLM wants a number for
# the other methods too, SGLang picks its own.
DFLASH_BLOCK = 16
VLLM_DEFAULT_TOKENS = {"eagle": 3, "eagle3": 3, "draft": 4, "ngram-simple": 4}
SGLANG_ALGORITHMS = {
    "dflash": "DFLASH",
    "eagle": "EAGLE",
    "eagle3": "EAGLE3",
    "draft": "STANDALONE",
    "ngram-simple": "NGRAM",
}
VLLM_METHODS = {
    "dflash": "dflash",
    "eagle": "eagle",
    "eagle3": "eagle3",
    "draft": "draft_model",
    "ngram-simple": "ngram",
}
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


@dataclass(frozen=True)
class EngineInfo:
    name: str
    shown_launcher: tuple[str, ...]  # how the printed command starts
    install: str  # what to run when it is not installed


ENGINES = {
    "vllm": EngineInfo("vLLM", ("vllm", "serve"), "pip install 'vllm>=0.25' (DFlash for Gemma 4 needs 0.25 or later)"),
    "sglang": EngineInfo(
        "SGLang",
        ("python", "-m", "sglang.launch_server"),
        "pip install 'sglang[all]>=0.5.14' (DFlash for Gemma 4 needs 0.5.14 or later)",
    ),
}


class EngineMissing(StartError):
    """The profile's engine is not installed where localagent can run it."""


def installed_launcher(engine: str) -> tuple[str, ...] | None:
    """The start of the engine's command on this machine, or None when it is not installed."""
    if engine == "vllm":
        found = which_absolute("vllm")
        return (found, "serve") if found else None
    for python in dict.fromkeys((sys.executable, which_absolute("python3"), which_absolute("python"))):
        if python and _has_module(python, "sglang"):
            return (python, "-m", "sglang.launch_server")
    return None


def _has_module(python: str, module: str) -> bool:
    """Asked from "/", as the engine will run: from here, a folder of that name would count."""
    probe = f"import importlib.util, sys; sys.exit(importlib.util.find_spec({module!r}) is None)"
    try:
        done = subprocess.run([python, "-c", probe], capture_output=True, timeout=30, check=False, cwd="/")
        return done.returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def engine_plan(
    profile: Profile,
    *,
    host: str | None = None,
    port: int | None = None,
    api_key: str | None = None,
    launcher: tuple[str, ...] | None = None,
) -> LaunchPlan:
    """The launch command of ``profile``'s engine. ``launcher`` None: as printed for the user."""
    info = ENGINES[profile.engine]
    host = host or profile.host or DEFAULT_HOST
    port = port or profile.port or DEFAULT_PORT
    start = list(launcher or info.shown_launcher)
    env: dict[str, str] = {}
    if profile.engine == "vllm":
        argv = [*start, _model(profile.model), "--host", host, "--port", str(port), *_vllm_options(profile)]
        if api_key:
            env["VLLM_API_KEY"] = api_key  # vLLM reads it there; /health and /metrics stay open
    else:
        argv = [
            *start,
            "--model-path",
            _model(profile.model),
            "--host",
            host,
            "--port",
            str(port),
            "--enable-metrics",
            *_sglang_options(profile),
        ]
        if api_key:
            argv += ["--api-key", api_key]  # SGLang takes it from its command line only
    argv += profile.extra_args
    notes = _notes(profile)
    if api_key and profile.engine == "sglang":
        notes.append(
            "note: SGLang takes its API key only on its command line, where other users of this machine can "
            "read it (/proc/PID/cmdline); localagent shows it nowhere"
        )
    if not is_loopback(host):
        notes.append(
            f"warning: listening on {host} exposes {info.name} to your network; use 127.0.0.1 unless you mean "
            "to share it (and then set an api_key)"
        )
    return LaunchPlan(
        argv=argv, host=host, port=port, notes=notes, env=env, program=info.name, readiness="http", cwd="/"
    )


def engine_model(profile: Profile) -> str:
    """The model as the engine names it (its repository or directory), as /v1/models lists it."""
    return profile.model_id or _model(profile.model)


def _model(source: ModelSource | None) -> str:
    assert source is not None and (source.hf or source.path) is not None  # Profile validates engine models
    if source.path is not None:
        return str(source.path.expanduser().resolve())  # the engine runs from "/", not from here
    return str(source.hf)


# Each engine's spelling of tensor parallelism and the context length.
SIZE_FLAGS = {"vllm": ("--tensor-parallel-size", "--max-model-len"), "sglang": ("--tp-size", "--context-length")}


def _size_options(profile: Profile) -> list[str]:
    """GPUs, context and the served name, in the engine's own words."""
    tp_flag, ctx_flag = SIZE_FLAGS[profile.engine]
    options: list[str] = []
    if profile.tensor_parallel:
        options += [tp_flag, str(profile.tensor_parallel)]
    if profile.ctx_size:
        options += [ctx_flag, str(profile.ctx_size)]
    if profile.model_id:
        options += ["--served-model-name", profile.model_id]
    return options


def _vllm_options(profile: Profile) -> list[str]:
    options = _size_options(profile)
    spec = profile.speculative
    if spec.enabled:
        options += ["--speculative-config", json.dumps(_vllm_speculative(spec))]
    return options


def _vllm_speculative(spec: Speculative) -> dict[str, object]:
    config: dict[str, object] = {"method": VLLM_METHODS[spec.type]}
    if spec.draft_model is not None:
        config["model"] = _model(spec.draft_model)
    default = DFLASH_BLOCK - 1 if spec.type == "dflash" else VLLM_DEFAULT_TOKENS[spec.type]
    config["num_speculative_tokens"] = spec.n_max or default
    if spec.type == "ngram-simple":
        for key, value in (("prompt_lookup_max", spec.ngram_n_max), ("prompt_lookup_min", spec.ngram_n_min)):
            if value is not None:
                config[key] = value
    return config


def _sglang_options(profile: Profile) -> list[str]:
    options = _size_options(profile)
    spec = profile.speculative
    if not spec.enabled:
        return options
    options += ["--speculative-algorithm", SGLANG_ALGORITHMS[spec.type]]
    if spec.draft_model is not None:
        options += ["--speculative-draft-model-path", _model(spec.draft_model)]
    if spec.type == "dflash":
        # The whole block, anchor included; SGLang fixes steps and top-k at 1 for DFlash itself.
        options += ["--speculative-num-draft-tokens", str((spec.n_max or DFLASH_BLOCK - 1) + 1)]
    elif spec.type == "ngram-simple":
        if spec.n_max:
            options += ["--speculative-num-draft-tokens", str(spec.n_max)]
    elif spec.n_max:
        # A chain (top-k 1) of n_max steps verifies n_max drafts plus the anchor. Unset, SGLang
        # chooses all three itself (it refuses top-k or draft tokens without the steps).
        options += [
            "--speculative-num-steps",
            str(spec.n_max),
            "--speculative-eagle-topk",
            "1",
            "--speculative-num-draft-tokens",
            str(spec.n_max + 1),
        ]
    return options


def _notes(profile: Profile) -> list[str]:
    ignored = [name for name in LLAMA_ONLY_FIELDS if name in profile.model_fields_set]
    if not ignored:
        return []
    return [f"note: {', '.join(ignored)} are llama-server settings and do not apply to a {profile.engine} profile"]


def require_engine(profile: Profile) -> tuple[str, ...]:
    """The installed launcher, or EngineMissing saying what to install."""
    launcher = installed_launcher(profile.engine)
    if launcher is None:
        info = ENGINES[profile.engine]
        raise EngineMissing(
            f"profile {profile.name!r} runs on {info.name}, which is not installed here; install it with "
            f"{info.install} on a machine with the GPUs, or print the command with `localagent server cmd {profile.name}`"
        )
    return launcher
