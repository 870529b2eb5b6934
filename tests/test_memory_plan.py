"""`server plan`: GPU memory from GGUF headers (generated here with the gguf package's writer, so
the layout is the real one), against figures computed by hand from llama.cpp's sizing rules."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from gguf import GGUFWriter
from gguf.constants import GGMLQuantizationType

from server.gguf_header import GGUFHeaderError, read_header
from server.memory_plan import (
    GIB,
    CacheSettings,
    element_bytes,
    kv_cache_bytes,
    plan_memory,
    shape_from_header,
)
from server.model_figures import GEMMA4_31B_DFLASH_Q5_K_M, GEMMA4_31B_Q4_K_S
from server.model_shapes import find_shape, read_remote_shape
from server.profiles import BUILTIN_PROFILES, ModelSource

SWA_PATTERN = [True, True, True, True, True, False]


def write_gemma4_like(path: Path, *, pattern: list[bool] | None = SWA_PATTERN, arch: str = "gemma4") -> Path:
    """Six layers, five sliding (4 KV heads of 16) and one full (1 KV head of 32), a 300-token
    vocabulary, and tensors in f16, q8_0 and f32."""
    writer = GGUFWriter(str(path), arch)
    writer.add_block_count(6)
    writer.add_embedding_length(64)
    writer.add_feed_forward_length(128)
    writer.add_head_count(4)
    writer.add_head_count_kv([4, 4, 4, 4, 4, 1])
    writer.add_key_length(32)
    writer.add_value_length(32)
    writer.add_uint32(f"{arch}.attention.key_length_swa", 16)
    writer.add_uint32(f"{arch}.attention.value_length_swa", 16)
    writer.add_sliding_window(128)
    if pattern is not None:
        writer.add_array(f"{arch}.attention.sliding_window_pattern", pattern)
    writer.add_context_length(4096)
    writer.add_token_list([f"t{i}" for i in range(5000)])
    writer.add_tensor("token_embd.weight", np.zeros((300, 64), dtype=np.float16))
    q8 = np.zeros((64, 64 // 32 * 34), dtype=np.uint8)  # 64 rows of 64 q8_0 elements, as bytes
    writer.add_tensor("blk.0.attn_q.weight", q8, raw_dtype=GGMLQuantizationType.Q8_0)
    writer.add_tensor("output_norm.weight", np.zeros(64, dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


# Hand-computed: token_embd 300*64*2 + attn_q 64*64*34/32 + output_norm 64*4.
WEIGHTS = 300 * 64 * 2 + 64 * 64 * 34 // 32 + 64 * 4


def test_the_header_gives_the_shape_llama_cpp_reads(tmp_path: Path) -> None:
    path = write_gemma4_like(tmp_path / "m.gguf")
    with path.open("rb") as handle:
        header = read_header(handle)
    shape = shape_from_header(header, "test")
    assert (shape.architecture, shape.n_layer, shape.n_embd, shape.n_ff, shape.n_vocab) == ("gemma4", 6, 64, 128, 5000)
    assert shape.head_count_kv == (4, 4, 4, 4, 4, 1)
    assert shape.swa_layers == tuple(SWA_PATTERN) and shape.sliding_window == 128
    assert shape.row_elements(0) == (64, 64) and shape.row_elements(5) == (32, 32)
    assert shape.weights_bytes == WEIGHTS and shape.context_length == 4096
    # The long token list is skipped, its length kept.
    assert "tokenizer.ggml.tokens" not in header.metadata and header.array_lengths["tokenizer.ggml.tokens"] == 5000


def test_kv_cache_bytes_follow_llama_cpps_rules(tmp_path: Path) -> None:
    shape = shape_from_header(read_header((write_gemma4_like(tmp_path / "m.gguf")).open("rb")), "test")
    base = CacheSettings(
        n_ctx=1000, n_seq=1, unified=False, n_ubatch=64, swa_full=False, flash_attn=True, type_k="f16", type_v="q8_0"
    )
    # Full layer: 1024 cells (1000 padded to 256) x (32 K x 2 bytes + 32 V x 34/32 bytes).
    full = 1024 * (32 * 2 + 32 * 34 / 32)
    # Sliding layers: pad256(min(1024, 128 + 64)) = 256 cells x (64 x 2 + 64 x 34/32), five of them.
    sliding = 5 * 256 * (64 * 2 + 64 * 34 / 32)
    assert kv_cache_bytes(shape, base) == int(full + sliding)
    # swa_full: the sliding layers keep every cell.
    assert kv_cache_bytes(shape, _with(base, swa_full=True)) == int(full + 5 * 1024 * (64 * 2 + 64 * 34 / 32))
    # Without flash attention V rows are padded to the widest layer's (64).
    assert kv_cache_bytes(shape, _with(base, flash_attn=False)) == int(1024 * (32 * 2 + 64 * 34 / 32) + sliding)
    # Two slots in two streams: a window per stream.
    assert kv_cache_bytes(shape, _with(base, n_seq=2)) == int(full + 2 * sliding)
    # Three slots in three streams of pad256(1024 / 3) = 512 cells: 1536 full-layer cells, not 1024.
    three = _with(base, n_seq=3)
    assert kv_cache_bytes(shape, three) == int(1536 * (32 * 2 + 32 * 34 / 32) + 3 * 256 * 5 * (64 * 2 + 64 * 34 / 32))
    # Two slots unified: one stream whose window covers both sequences, pad256(128*2 + 64) = 512.
    assert kv_cache_bytes(shape, _with(base, n_seq=2, unified=True)) == int(full + 5 * 512 * (64 * 2 + 64 * 34 / 32))


def _with(cache: CacheSettings, **changes) -> CacheSettings:
    from dataclasses import replace

    return replace(cache, **changes)


def test_a_gemma3_file_without_a_pattern_gets_llama_cpps_period_of_six(tmp_path: Path) -> None:
    path = write_gemma4_like(tmp_path / "g3.gguf", pattern=None, arch="gemma3")
    shape = shape_from_header(read_header(path.open("rb")), "test")
    assert shape.swa_layers == (True, True, True, True, True, False)


def test_the_tiny_models_real_header_reads(tiny_gguf: Path) -> None:
    shape = shape_from_header(read_header(tiny_gguf.open("rb")), "tiny")
    assert (shape.architecture, shape.n_layer, shape.n_vocab) == ("gemma3", 18, 262144)
    # Within the file: the header itself and alignment padding are the rest.
    assert 0.9 * tiny_gguf.stat().st_size < shape.weights_bytes <= tiny_gguf.stat().st_size


def test_not_a_gguf_and_a_cut_header_are_errors(tmp_path: Path) -> None:
    (tmp_path / "x.zip").write_bytes(b"PK\x03\x04" + b"\0" * 64)
    with pytest.raises(GGUFHeaderError, match="no GGUF magic"):
        read_header((tmp_path / "x.zip").open("rb"))
    whole = write_gemma4_like(tmp_path / "m.gguf").read_bytes()
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(whole[:200])
    with pytest.raises(GGUFHeaderError, match="ends inside its header"):
        read_header(cut.open("rb"))
    assert element_bytes("q4_0") == 18 / 32
    with pytest.raises(Exception, match="unknown KV cache type 'q3_x'"):
        element_bytes("q3_x")


# -- the plan ---------------------------------------------------------------------------------------


def test_the_31b_dflash_profile_on_a_24_gib_card_from_the_recorded_figures() -> None:
    profile = BUILTIN_PROFILES["gemma4-31b-dflash"]
    plan = plan_memory(profile, GEMMA4_31B_Q4_K_S, GEMMA4_31B_DFLASH_Q5_K_M, 24 * GIB, "--vram")
    lines = {line.what: line.bytes for line in plan.lines}
    # 10 full layers x 32768 cells x 4 heads x (512 K + 512 V) x 2 bytes (f16).
    full = 10 * 32768 * 4 * 1024 * 2
    # 50 sliding layers x pad256(1024 + 512) = 1536 cells x 16 heads x (256 + 256) x 2 bytes.
    sliding = 50 * 1536 * 16 * 512 * 2
    assert lines["target KV cache"] == full + sliding
    # The draft: its full layer at the target's context, four sliding layers at pad256(2048 + 512).
    assert lines["draft KV cache"] == 32768 * 8 * 256 * 2 + 4 * 2560 * 8 * 256 * 2
    assert lines["target weights"] == 17_850_000_000 and lines["draft weights"] == 1_040_000_000
    assert plan.fits is True and plan.budget == 23 * GIB
    assert 32768 <= plan.largest_ctx < 65536
    smaller = plan_memory(profile, GEMMA4_31B_Q4_K_S, GEMMA4_31B_DFLASH_Q5_K_M, 16 * GIB, "--vram")
    assert smaller.fits is False and smaller.largest_ctx is None  # the weights alone do not fit


def test_a_plan_without_a_context_or_gpu_layers_is_a_clear_error() -> None:
    profile = BUILTIN_PROFILES["gemma4-31b"]
    with pytest.raises(Exception, match="sets no ctx_size"):
        plan_memory(profile.model_copy(update={"ctx_size": None}), GEMMA4_31B_Q4_K_S, None, None, "")
    with pytest.raises(Exception, match="puts no layers on a GPU"):
        plan_memory(profile.model_copy(update={"gpu_layers": 0}), GEMMA4_31B_Q4_K_S, None, None, "")


def test_a_local_file_wins_over_recorded_figures(tmp_path: Path) -> None:
    from server.models import ModelDirs

    path = write_gemma4_like(tmp_path / "m.gguf")
    found = find_shape(ModelSource(path=path), ModelDirs(models=tmp_path, cache=tmp_path))
    assert found.note is None and found.shape.weights_bytes == WEIGHTS and str(path) in found.shape.source


def test_without_a_network_the_recorded_figures_answer_and_say_so(tmp_path: Path) -> None:
    from server.models import ModelDirs

    def offline(_repo: str, _file: str):
        raise OSError("no network")

    source = BUILTIN_PROFILES["gemma4-31b"].model
    found = find_shape(source, ModelDirs(models=tmp_path, cache=tmp_path), remote=offline)
    assert found.shape is GEMMA4_31B_Q4_K_S
    assert found.note is not None and "no network" in found.note and "recorded figures" in found.note
    unknown = ModelSource(hf_repo="someone/unknown-GGUF", hf_file="x.gguf")
    with pytest.raises(Exception, match="no figures are recorded"):
        find_shape(unknown, ModelDirs(models=tmp_path, cache=tmp_path), remote=offline)


@pytest.fixture
def hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[dict]]:
    """A Hugging Face stand-in serving one repository's file, honouring Range."""
    body = write_gemma4_like(tmp_path / "served.gguf").read_bytes() + b"\0" * (1 << 20)
    seen: list[dict] = []

    class Hub(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append({"path": self.path, "range": self.headers.get("Range")})
            start, _, end = (self.headers.get("Range") or "bytes=0-").removeprefix("bytes=").partition("-")
            part = body[int(start) : int(end) + 1 if end else None]
            self.send_response(206)
            self.send_header("Content-Length", str(len(part)))
            self.end_headers()
            try:
                self.wfile.write(part)
            except OSError:
                pass  # the reader stops at the end of the header

        def log_message(self, *_args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hub)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{server.server_address[1]}")
    try:
        yield seen
    finally:
        server.shutdown()
        server.server_close()


def test_a_remote_header_is_read_through_one_range_request(hub: list[dict]) -> None:
    shape = read_remote_shape("owner/model-GGUF", "m-Q8_0.gguf")
    assert shape.weights_bytes == WEIGHTS and "owner/model-GGUF/m-Q8_0.gguf" in shape.source
    assert [r["path"] for r in hub] == ["/owner/model-GGUF/resolve/main/m-Q8_0.gguf"]
    assert hub[0]["range"] == "bytes=0-67108863"


def test_server_plan_answers_for_the_31b_profile_offline(la_env) -> None:
    la_env.env["HF_HUB_OFFLINE"] = "1"
    shown = la_env.run("server", "plan", "gemma4-31b-dflash", "--vram", "24")
    assert shown.code == 0, shown.stderr
    assert "fits: 22." in shown.stdout and "largest context that fits:" in shown.stdout
    assert "recorded figures for Gemma 4 31B" in shown.stderr and "z-lab/gemma-4-31B-it-DFlash" in shown.stderr
    data = json.loads(la_env.run("server", "plan", "gemma4-31b-dflash", "--vram", "16", "--json").stdout)
    assert data["fits"] is False and data["largest_ctx"] is None
    assert data["total_bytes"] == sum(line["bytes"] for line in data["lines"])
    bad = la_env.run("server", "plan", "gemma4-31b", "--vram", "-3")
    assert bad.code == 2 and "--vram -3" in bad.stderr and "Traceback" not in bad.stderr
    cpu = la_env.run("server", "plan", "tiny", "--vram", "24")
    assert cpu.code != 0 and "puts no layers on a GPU" in cpu.stderr
