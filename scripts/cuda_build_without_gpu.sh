#!/usr/bin/env bash
# The CUDA build, proven on a machine without a GPU: compile llama-server with CUDA for one
# architecture (default 89, an RTX 4090) with whatever toolkit localagent finds (NVIDIA's PyPI
# wheels where there is no system toolkit), then run the smoke test, which the build serves on the
# CPU because the CUDA backend is a loadable module that finds no driver here.
#
#   scripts/cuda_build_without_gpu.sh [ARCH] [JOBS]
#
# On 2 cores this takes most of an hour (144 CUDA objects, 30-60 s each): too long for CI, which
# tests the toolkit discovery, the CMake flags and the rpath with stand-ins instead.
set -euo pipefail

arch=${1:-89}
jobs=${2:-$(nproc)}
started=$SECONDS
localagent server build --cuda --cuda-arch "$arch" -j "$jobs" --rebuild
echo "build: $((SECONDS - started)) s for sm_$arch with $jobs jobs"
localagent server which --smoke
python3 - <<'PY'
import json
from pathlib import Path
from localagent.paths import app_paths

cache = app_paths().cache
toolkit = cache / "cuda-toolkit"
size = sum(p.stat().st_size for p in toolkit.rglob("*") if p.is_file() and not p.is_symlink()) if toolkit.exists() else 0
print(f"CUDA toolkit in the cache: {size / 1e9:.2f} GB at {toolkit}")
builds = sorted((cache / "llama-server").glob("*/build.json"), key=lambda p: p.stat().st_mtime)
for info in builds[-1:]:
    data = json.loads(info.read_text())
    folder = info.parent
    total = sum(p.stat().st_size for p in folder.iterdir() if p.is_file())
    print(f"build {folder.name}: {data.get('cuda')}; {total / 1e6:.0f} MB in {folder}")
    cuda = folder / "libggml-cuda.so"
    if cuda.is_file():
        print(f"  libggml-cuda.so: {cuda.stat().st_size / 1e6:.0f} MB")
PY
