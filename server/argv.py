"""Turn a profile into the command line of one particular llama-server binary.

Every option is checked against that binary's capabilities. An option the binary cannot express
is an error naming the missing capability; nothing is dropped silently. The one documented
exception is old BeeLlama's DFlash cross-attention window, which newer binaries no longer have:
it is reported as a note.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from server.capabilities import Capabilities
from server.cpu import cpu_info
from server.cpu_threads import busy_cores, choose_threads
from server.defaults import DEFAULT_HOST, DEFAULT_PORT
from server.errors import ProfileError
from server.host_memory import auto_cache_mib, available_mib
from server.profiles import Profile
from server.rpc_endpoints import exposure_warning
from server.secret_argv import redact_argv

# DFlash drafts blocks of 16 tokens: drafting 15 after the anchor is what it is trained for.
DFLASH_DEFAULT_N_MAX = 15


@dataclass(frozen=True)
class ResolvedModels:
    model: Path
    draft: Path | None = None

    def size_bytes(self) -> int | None:
        try:
            return sum(path.stat().st_size for path in (self.model, self.draft) if path is not None)
        except OSError:
            return None  # not downloaded yet (`server cmd` plans without fetching)


@dataclass(frozen=True)
class LaunchPlan:
    argv: list[str]
    host: str
    port: int
    notes: list[str] = field(default_factory=list)
    model_bytes: int | None = None  # model + draft on disk: named when loading is killed (memory)
    # Given to the process through its environment, not its argv: every local process can read
    # /proc/PID/cmdline, while another process's environment is private (and hidden by the bash
    # sandbox even from the same user).
    env: dict[str, str] = field(default_factory=dict)
    # What runs, for messages ("llama-server was killed by ..."), and how to tell that it serves:
    # llama-server's /health JSON, any HTTP 200 from /health (vLLM, SGLang), or a TCP accept (an
    # RPC worker, which speaks no HTTP).
    program: str = "llama-server"
    readiness: Literal["llama-server", "http", "tcp"] = "llama-server"
    # The RPC workers the server computes on: a death is checked against them, to name the one gone.
    rpc_workers: tuple[str, ...] = ()
    # Where it runs; None: where localagent runs. An engine started as `python -m` would import a
    # module of the same name from that directory first, and the directory may be a stranger's
    # repository, so engines run from "/".
    cwd: str | None = None

    def shell(self) -> str:
        """The command line to show or paste; secrets in the environment are shown by name."""
        import shlex

        prefix = [f"{name}=${name}" for name in sorted(self.env)]
        argv = redact_argv(self.argv, "$API_KEY")
        return " ".join([*prefix, shlex.join(argv)]) if prefix else shlex.join(argv)


@dataclass
class _ArgvBuilder:
    caps: Capabilities
    profile: Profile
    binary: Path
    argv: list[str] = field(default_factory=list)

    def add(self, flag: str, *values: object, needs: str | None = None) -> None:
        if not self.caps.has(flag):
            what = needs or f"the flag {flag}"
            raise ProfileError(
                f"profile {self.profile.name!r} needs {what}, which {self.binary} does not offer; "
                "use a newer llama-server (localagent server build) or change the profile"
            )
        self.argv.append(flag)
        self.argv.extend(str(value) for value in values)


def build_launch_plan(
    profile: Profile,
    caps: Capabilities,
    binary: Path,
    models: ResolvedModels,
    *,
    host: str | None = None,
    port: int | None = None,
    api_key: str | None = None,
) -> LaunchPlan:
    host = host or profile.host or DEFAULT_HOST
    port = port or profile.port or DEFAULT_PORT
    notes: list[str] = []
    out = _ArgvBuilder(caps, profile, binary, [str(binary)])

    out.add("-m", models.model)
    _add_speculative(out, models, notes)
    out.add("--host", host)
    out.add("--port", port)
    env = {"LLAMA_API_KEY": api_key} if api_key else {}
    _add_resources(out, notes)
    _add_serving(out)
    _add_extra_args(out)

    if _is_wildcard(host):
        notes.append(
            f"warning: listening on {host} exposes the server to your network; "
            "use 127.0.0.1 unless you mean to share it (and then set an api_key)"
        )
    return LaunchPlan(
        argv=out.argv,
        host=host,
        port=port,
        notes=notes,
        model_bytes=models.size_bytes(),
        env=env,
        rpc_workers=tuple(profile.rpc_workers),
    )


def _add_resources(out: _ArgvBuilder, notes: list[str]) -> None:
    """Slots, GPU offload, batch and context sizes, threads and the KV cache."""
    profile, caps = out.profile, out.caps
    if profile.parallel is not None:
        out.add("-np", profile.parallel)
    if profile.kv_unified is not None:
        out.add("--kv-unified" if profile.kv_unified else "--no-kv-unified")
    if profile.rpc_workers:
        # Always in --help; a binary built without GGML_RPC refuses it when it starts (see
        # server.exit_reasons), so the plan cannot check more than the flag.
        out.add("--rpc", ",".join(profile.rpc_workers), needs="RPC workers (--rpc)")
        if warning := exposure_warning(list(profile.rpc_workers), binding=False):
            notes.append(warning)
    if profile.tensor_split is not None:
        out.add("--tensor-split", ",".join(f"{share:g}" for share in profile.tensor_split))
    if profile.gpu_layers is not None:
        out.add("-ngl", profile.gpu_layers)
    if profile.gpu_layers not in (None, 0) and caps.has("--fit"):
        # llama.cpp sizes what the profile leaves unset to the card's free memory, keeping a
        # margin (see `localagent server plan` for the figures before anything loads).
        out.add("--fit", "on")
    spec = profile.speculative
    if spec.draft_gpu_layers is not None:
        out.add("--spec-draft-ngl", spec.draft_gpu_layers, needs="draft model GPU offload")
    if profile.batch_size is not None:
        out.add("-b", profile.batch_size)
    if profile.ubatch_size is not None:
        out.add("-ub", profile.ubatch_size)
    if profile.ctx_size is not None:
        out.add("--ctx-size", profile.ctx_size)
    if profile.threads == "auto":
        choice = choose_threads(cpu_info(), busy_cores())
        out.add("-t", choice.threads)
        out.add("-tb", choice.threads)
        notes.append(choice.note)
    elif profile.threads is not None:
        out.add("-t", profile.threads)
    for flag, cache_type in (("--cache-type-k", profile.cache_type_k), ("--cache-type-v", profile.cache_type_v)):
        if cache_type is None:
            continue
        if caps.cache_types and cache_type not in caps.cache_types:
            raise ProfileError(
                f"profile {profile.name!r} asks for KV cache type {cache_type!r}, which {out.binary} does "
                f"not offer (it offers {', '.join(caps.cache_types)}); pick one of those"
            )
        out.add(flag, cache_type)


def _add_serving(out: _ArgvBuilder) -> None:
    """Attention and caches, the chat template, loading, logging and metrics, and sampling."""
    profile = out.profile
    if profile.swa_full:
        out.add("--swa-full", needs="a full-size sliding-window cache (--swa-full)")
    if profile.flash_attn is not None:
        out.add("--flash-attn", profile.flash_attn)
    if profile.cache_ram is not None:
        size = auto_cache_mib(available_mib()) if profile.cache_ram == "auto" else profile.cache_ram
        out.add("--cache-ram", size, needs="the prompt cache size limit (--cache-ram)")
    out.add("--jinja" if profile.jinja else "--no-jinja")
    if profile.chat_template_file is not None:
        if not profile.chat_template_file.is_file():
            raise ProfileError(
                f"profile {profile.name!r}: chat_template_file {profile.chat_template_file} does not exist"
            )
        out.add("--chat-template-file", profile.chat_template_file)
    _add_load_mode(out)
    if profile.no_host:
        out.add("--no-host")
    # localagent reads /metrics for live telemetry and owns the log file, so these are always on.
    out.add("--metrics")
    out.add("--log-timestamps")
    out.add("--log-prefix")
    if profile.reasoning is not None:
        out.add("--reasoning", profile.reasoning)
    sampling = profile.sampling
    out.add("--temp", sampling.temperature)
    out.add("--top-k", sampling.top_k)
    out.add("--top-p", sampling.top_p)
    out.add("--min-p", sampling.min_p)


def _add_speculative(out: _ArgvBuilder, models: ResolvedModels, notes: list[str]) -> None:
    spec = out.profile.speculative
    caps = out.caps
    if spec.type == "none":
        return
    if spec.type in ("dflash", "draft"):
        if models.draft is None:
            raise ProfileError(f"profile {out.profile.name!r}: the draft model was not resolved")
        out.add("--spec-draft-model", models.draft, needs="a draft model (--spec-draft-model)")
    if spec.type == "dflash":
        spec_type = caps.dflash_spec_type
        if spec_type is None:
            raise ProfileError(
                f"profile {out.profile.name!r} needs DFlash speculative decoding, but {out.binary} "
                f"offers --spec-type {','.join(caps.spec_types) or '(none)'}; build a DFlash-capable "
                "llama-server (localagent server build) or use a profile without DFlash"
            )
        out.add("--spec-type", spec_type)
        if spec.cross_ctx is not None:
            if caps.has("--spec-dflash-cross-ctx"):
                out.add("--spec-dflash-cross-ctx", spec.cross_ctx)
            else:
                notes.append(
                    f"note: cross_ctx = {spec.cross_ctx} is old BeeLlama's DFlash window; this binary's "
                    f"{spec_type} has no such window, so it does not apply"
                )
        n_max = spec.n_max
        if n_max is None and spec_type == "draft-dflash":
            n_max = DFLASH_DEFAULT_N_MAX
        if n_max is not None:
            out.add("--spec-draft-n-max", n_max, needs="a draft length limit (--spec-draft-n-max)")
    elif spec.type == "draft":
        if caps.supports_spec_type("draft-simple"):
            out.add("--spec-type", "draft-simple")
        if spec.n_max is not None:
            out.add("--spec-draft-n-max", spec.n_max, needs="a draft length limit (--spec-draft-n-max)")
    else:
        if not caps.supports_spec_type(spec.type):
            raise ProfileError(
                f"profile {out.profile.name!r} needs --spec-type {spec.type}, but {out.binary} offers "
                f"{','.join(caps.spec_types) or 'no speculative decoding'}"
            )
        out.add("--spec-type", spec.type)
        if spec.n_max is not None:
            out.add("--spec-draft-n-max", spec.n_max)
        for flag, value in (
            (f"--spec-{spec.type}-n-min", spec.ngram_n_min),
            (f"--spec-{spec.type}-n-max", spec.ngram_n_max),
            (f"--spec-{spec.type}-n-match", spec.ngram_n_match),
        ):
            if value is not None:
                out.add(flag, value, needs=f"n-gram tuning ({flag})")
    if spec.n_min is not None:
        out.add("--spec-draft-n-min", spec.n_min)
    if spec.p_min is not None:
        out.add("--spec-draft-p-min", spec.p_min, needs="a draft probability floor (--spec-draft-p-min)")
    if spec.draft_threads is not None:
        out.add("-td", spec.draft_threads)


def _add_load_mode(out: _ArgvBuilder) -> None:
    """mmap/mlock: ``--no-mmap --mlock`` on older binaries, ``--load-mode`` upstream."""
    profile = out.profile
    if profile.mmap and not profile.mlock:
        return
    if out.caps.has("--load-mode"):
        mode = {(True, True): "mmap+mlock", (False, True): "mlock", (False, False): "none"}
        out.add("--load-mode", mode[(profile.mmap, profile.mlock)])
        return
    if not profile.mmap:
        out.add("--no-mmap", needs="loading without mmap (--no-mmap or --load-mode)")
    if profile.mlock:
        out.add("--mlock", needs="locking the model in RAM (--mlock or --load-mode)")


def _add_extra_args(out: _ArgvBuilder) -> None:
    for arg in out.profile.extra_args:
        if arg.startswith("-") and not _is_number(arg):
            flag = arg.split("=", 1)[0]
            if not out.caps.has(flag):
                raise ProfileError(
                    f"profile {out.profile.name!r}: extra_args has {flag}, which {out.binary} does not "
                    "accept; check `llama-server --help` for the right spelling"
                )
        out.argv.append(arg)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _is_wildcard(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_unspecified
    except ValueError:
        return False
