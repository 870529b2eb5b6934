#!/usr/bin/env bash
# The GPU path, end to end, on a machine with an NVIDIA GPU and its driver:
#   build llama-server with CUDA for the card found (the system's toolkit, or NVIDIA's wheels),
#   smoke-test it, `server check` on tiny-dflash with every layer on the GPU, a baseline-vs-
#   speculation bench and a session replay on the tiny model on the GPU, the 31B plan for this
#   card, then one summary. Nothing here runs in the test suite: the tests never need a GPU.
#
#   scripts/gpu_check.sh [OUT_DIR]        (default: gpu-check-<date>; logs of every step go there)
#
# The build is cached like any other (~/.cache/localagent), so a second run starts at the check.
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-gpu-check-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out"
out=$(cd "$out" && pwd)
summary="$out/summary.txt"
: >"$summary"

if ! command -v nvidia-smi >/dev/null 2>&1; then
    echo "gpu_check: no nvidia-smi here; run it on a machine with an NVIDIA GPU and its driver" >&2
    exit 2
fi
if ! command -v localagent >/dev/null 2>&1; then
    echo "gpu_check: localagent is not installed; run: pip install -e '$root'" >&2
    exit 2
fi

# A home of its own (config, sessions, server records) so the user's settings play no part; the
# cache (builds, the CUDA toolkit, models) stays shared.
LOCALAGENT_CACHE_DIR=${LOCALAGENT_CACHE_DIR:-$(python3 -c 'from localagent.paths import app_paths; print(app_paths().cache)' 2>/dev/null || echo "$HOME/.cache/localagent")}
export LOCALAGENT_CACHE_DIR
export LOCALAGENT_HOME="$out/home"
mkdir -p "$LOCALAGENT_HOME/config"
cat >"$LOCALAGENT_HOME/config/config.toml" <<'TOML'
# The tiny profiles with every layer on the GPU.
[profiles.tiny-dflash-gpu]
extends = "tiny-dflash"
gpu_layers = "all"
speculative = { type = "dflash", draft_model = { generated = "tiny-dflash-draft" }, draft_gpu_layers = "all" }

[profiles.tiny-gpu]
extends = "tiny"
gpu_layers = "all"

[profiles.tiny-baseline-gpu]
extends = "tiny-baseline"
gpu_layers = "all"
TOML

step() {
    local name=$1
    shift
    local started=$SECONDS
    echo "== $name: $*" | tee -a "$summary"
    if "$@" >"$out/$name.log" 2>&1; then
        echo "   ok in $((SECONDS - started)) s" | tee -a "$summary"
    else
        echo "   FAILED (exit $?) in $((SECONDS - started)) s; last lines of $out/$name.log:" | tee -a "$summary"
        tail -n 15 "$out/$name.log" | sed 's/^/   | /' | tee -a "$summary"
    fi
}

{
    echo "localagent gpu check, $(date -u +%Y-%m-%dT%H:%M:%SZ), $(localagent --version)"
    nvidia-smi --query-gpu=name,memory.total,driver_version,compute_cap --format=csv,noheader | sed 's/^/gpu: /'
    nvidia-smi | grep -o 'CUDA Version: [0-9.]*' | sed 's/^/driver: /'
} | tee -a "$summary"

step build localagent server build --cuda
step which localagent server which --smoke
step check localagent server check tiny-dflash-gpu --max-tokens 128
step bench localagent bench --profiles tiny-baseline-gpu tiny-gpu --runs 3 --max-tokens 256 --out "$out/bench"
step replay localagent bench --profiles tiny-baseline-gpu tiny-gpu --replay "$root/examples/bench/sessions/scripted-edits.jsonl" --per-request --runs 3 --out "$out/replay"
step plan localagent server plan gemma4-31b-dflash

echo "== results" | tee -a "$summary"
grep -h -E "llama-server|CUDA|cuda" "$out/which.log" | head -n 8 | sed 's/^/   /' | tee -a "$summary"
grep -h -E "tok/s|drafted|accept" "$out/check.log" | head -n 6 | sed 's/^/   /' | tee -a "$summary"
for report in bench replay; do
    grep -h -E "speedup|tok/s|accept" "$out/$report.log" | tail -n 8 | sed "s/^/   $report: /" | tee -a "$summary"
done
grep -h -E "fits|largest" "$out/plan.log" | sed 's/^/   /' | tee -a "$summary"
echo "summary: $summary"
