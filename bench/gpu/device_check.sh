#!/usr/bin/env bash
# bench/gpu/device_check.sh [--rehearse] [PACK_DIR]: tailsweep on a GPU node
# that has none of our Debian packages, in one call (docs/operations.md, "GPU nodes"):
#
#   1. probes: GPU, torch version and ABI, nvcc, g++, cmake, OS
#   2. configures and builds the torch-only tree (-DTAILSWEEP_TORCH_ONLY=ON)
#      against python3's torch wheel (a CUDA LibTorch) and PACK_DIR's
#      dependencies (deploy/gpu/pack.sh), -j$(nproc)
#   3. runs core_test's *_CUDA twins
#   4. a real GPU sweep: PACK_DIR's coordinator, worker (--devices auto) and
#      CLI, with tailsweep-lab built in 2, run sweeps/gpu-check.yaml (4
#      kernels x 2 seeds, N = 4096, 300 steps); `tailsweep results` prints
#      the table and each job's result names its device
#   5. the paper-size step (N = 16384, d = 256, 6 layers, 8 heads, batch 4)
#      per kernel in float32, tf32 and bfloat16: gpu_step_bench, then the
#      FlexAttention baseline (bench/gpu/flex_baseline.py) at the same shapes
#
# --rehearse runs the same steps on a CPU machine against Debian's LibTorch
# and PACK_DIR's dependencies, at small sizes (the CUDA tests skip): run it
# before every device call. Writes into $OUT (default: device-out/):
# summary.txt first (one line per step as it ends, so a run cut short still
# says what passed), results.txt (the figures), logs.tar.gz (every log).
# Every step runs under a timeout inside a total budget (TAILSWEEP_BUDGET_S,
# default 510 s; rehearsing, on 2 cores, 4 times each: 2040 s). Exit status:
# the number of failed steps. ctest's GpuCheck.RehearsalOnTheCpu runs
# pack.sh and the rehearsal.
set -uo pipefail
rehearse=0
if [ "${1:-}" = --rehearse ]; then rehearse=1; shift; fi
if [ "${1:-}" = --help ] || [ "${1:-}" = -h ]; then
  sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'
  exit 0
fi
src=$(cd "$(dirname "$0")/../.." && pwd)
pack=$(cd "${1:-$src/.gpu-pack}" 2> /dev/null && pwd) || {
  echo "device_check.sh: no pack folder ${1:-$src/.gpu-pack}: run deploy/gpu/pack.sh" >&2
  exit 2
}
out=${OUT:-$src/device-out}
mkdir -p "$out"
work=$(mktemp -d /tmp/tailsweep-gpu.XXXXXX)
logs=$work/logs
mkdir -p "$logs"
summary=$out/summary.txt
results=$out/results.txt
: > "$summary"
: > "$results"
start=$(date +%s)
slow=$((rehearse == 1 ? 4 : 1))
budget=${TAILSWEEP_BUDGET_S:-$((510 * slow))}
failed=0
finish() {
  tar -C "$work" -czf "$out/logs.tar.gz" logs 2> /dev/null
  echo "total $(($(date +%s) - start)) s, $failed step(s) failed" >> "$summary"
}
trap finish EXIT

say() { echo "$*" | tee -a "$summary"; }
# step NAME LIMIT_S CMD...: CMD (a command, or a function of this script,
# exported) under a timeout (LIMIT_S or what is left of the budget), its
# output in logs/NAME.log; one summary line; the log's tail in the summary
# when it failed.
step() {
  local name=$1 limit=$(($2 * slow)) left rc t0
  shift 2
  left=$((budget - ($(date +%s) - start)))
  [ "$limit" -gt "$left" ] && limit=$left
  if [ "$limit" -le 5 ]; then
    say "$(printf '%-12s SKIP (budget spent)' "$name")"
    failed=$((failed + 1))
    return 1
  fi
  t0=$(date +%s)
  if declare -F "$1" > /dev/null; then set -- bash -c "set -uo pipefail; $*"; fi
  timeout --kill-after=10 "$limit" "$@" > "$logs/$name.log" 2>&1
  rc=$?
  if [ "$rc" = 0 ]; then
    say "$(printf '%-12s PASS %4d s' "$name" $(($(date +%s) - t0)))"
  else
    say "$(printf '%-12s FAIL %4d s (exit %d%s)' "$name" $(($(date +%s) - t0)) \
      "$rc" "$([ "$rc" = 124 ] && echo ", timed out after ${limit} s")")"
    tail -15 "$logs/$name.log" | sed 's/^/    /' >> "$summary"
    failed=$((failed + 1))
  fi
  return "$rc"
}

say "tailsweep device check $(git -C "$src" rev-parse --short HEAD 2> /dev/null)" \
  "$([ $rehearse = 1 ] && echo '(rehearsal on the CPU)') $(date -u -Is)"

# 1. Probes.
probes() {
  echo "== GPU"
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 || true
  echo "== python3 torch"
  python3 -c 'import torch; print(torch.__version__, "cuda", torch.version.cuda,
"cxx11_abi", torch._C._GLIBCXX_USE_CXX11_ABI, "available", torch.cuda.is_available(),
torch.cuda.get_device_name(0) if torch.cuda.is_available() else "-");
print("cmake_prefix_path", torch.utils.cmake_prefix_path)' 2>&1 || true
  echo "== nvcc"; nvcc --version 2>&1 | tail -2 || true
  echo "== g++"; g++ --version | head -1
  echo "== cmake"; cmake --version | head -1
  echo "== ninja"; ninja --version 2>&1 || echo none
  echo "== os"; (. /etc/os-release && echo "$PRETTY_NAME"); uname -r
  echo "== cpus $(nproc), memory $(free -g | awk '/Mem:/ {print $2}') GiB"
}
export -f probes
export rehearse src work logs
step probes 30 probes
grep -A1 -E '^== (GPU|python3 torch|nvcc|g\+\+|os)' "$logs/probes.log" |
  grep -v -E '^(==|--)' | sed 's/^/    /' >> "$summary"

# 2. The torch-only build against the wheel (or, rehearsing, Debian's
# LibTorch), with the packed dependencies first in the search path.
tar -C "$work" -xzf "$pack/deps.tar.gz"
tar -C "$work" -xzf "$pack/services.tar.gz"
deps=$work/usr
prefix=$deps
cmake_args=(-G Ninja -DTAILSWEEP_TORCH_ONLY=ON -DCMAKE_BUILD_TYPE=Release
  -DCMAKE_CXX_STANDARD="${TAILSWEEP_CXX_STANDARD:-17}")
if [ $rehearse = 0 ]; then
  torch_prefix=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')
  prefix="$torch_prefix;$deps"
  nvcc_path=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
  cmake_args+=(-DCMAKE_CUDA_COMPILER="$nvcc_path"
    -DCUDAToolkit_ROOT="$(dirname "$(dirname "$nvcc_path")")")
fi
build=$work/build
export LD_LIBRARY_PATH=$deps/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
step configure 150 cmake -S "$src" -B "$build" -DCMAKE_PREFIX_PATH="$prefix" \
  "${cmake_args[@]}"
grep -E '^(absl|CLI11|nlohmann_json|yaml-cpp|GTest|Torch)_DIR' "$build/CMakeCache.txt" \
  2> /dev/null | sed 's/^/    /' >> "$summary"
jobs=$(nproc)
step build 360 cmake --build "$build" -j "$jobs" --target tailsweep-lab core_test \
  gpu_step_bench
lab=$build/bin/tailsweep-lab
export lab
if [ -x "$lab" ]; then
  { readelf -d "$lab" | grep -E 'NEEDED.*(torch|c10)' || true; } | sed 's/^/    /' >> "$summary"
fi

# 3. The CUDA twins (they skip, saying why, without a GPU).
step cuda_tests 180 "$build/bin/core_test" --gtest_filter='*_CUDA*' \
  --gtest_output="xml:$logs/cuda_tests.xml"
grep -E '^\[ +(OK|FAILED|SKIPPED) +\]' "$logs/cuda_tests.log" | sed 's/^/    /' >> "$summary"

# 4. A real sweep through the carried services and the worker's GPU.
sweep() {
  local bin dir=$work/sweep spec=$work/gpu-check.yaml port
  bin=$(echo "$work"/tailsweep-*/bin)  # the release: no LD_LIBRARY_PATH
  port=$((50000 + RANDOM % 10000))
  mkdir -p "$dir"
  if [ $rehearse = 1 ]; then
    sed -e 's/n_points: 4096/n_points: 128/' -e 's/steps: 300/steps: 30/' \
      -e 's/warmup: 30/warmup: 3/' -e 's/checkpoint_every: 100/checkpoint_every: 10/' \
      "$src/sweeps/gpu-check.yaml" > "$spec"
  else
    cp "$src/sweeps/gpu-check.yaml" "$spec"
  fi
  export TAILSWEEP_COORDINATOR=127.0.0.1:$port
  local services_env=(env)
  pids=()
  trap 'kill -TERM "${pids[@]}" 2> /dev/null; wait' EXIT
  trap 'exit 143' TERM
  "${services_env[@]}" "$bin/tailsweep-coordinator" --db "$dir/db" \
    --data-dir "$dir/data" --listen "$TAILSWEEP_COORDINATOR" \
    2> "$logs/coordinator.log" &
  pids+=($!)
  "${services_env[@]}" "$bin/tailsweep-worker" --devices auto \
    --slots-per-device 2 --lab-bin "$lab" --work-dir "$dir/work" \
    2> "$logs/worker.log" &
  pids+=($!)
  local ok=0
  for _ in $(seq 1 100); do
    if "${services_env[@]}" "$bin/tailsweep" submit "$spec"; then ok=1; break; fi
    sleep 0.2
  done
  [ $ok = 1 ] || return 1
  # Watched until done; a worker that exits first (no device found, a
  # library missing, the lab binary not built) leaves nothing to watch:
  # the sweep fails at once instead of waiting out the device time.
  "${services_env[@]}" "$bin/tailsweep" watch gpu-check --interval 5 &
  local watch=$!
  while kill -0 "$watch" 2> /dev/null; do
    if ! kill -0 "${pids[1]}" 2> /dev/null; then
      echo "the worker exited before the sweep was done:"
      tail -5 "$logs/worker.log"
      kill "$watch" 2> /dev/null
      wait "$watch" 2> /dev/null
      return 1
    fi
    sleep 1
  done
  wait "$watch" || true
  "${services_env[@]}" "$bin/tailsweep" results gpu-check |
    tee "$logs/results_table.txt"
  [ "${PIPESTATUS[0]}" = 0 ] || return 1
  echo "== devices the worker found"
  grep -i -m3 'device' "$logs/worker.log" || true
  echo "== each job's device and steps per second"
  for r in "$dir"/work/*/result.json; do
    python3 - "$r" "$(dirname "$r")/metrics.jsonl" << 'PY'
import json, sys
r = json.load(open(sys.argv[1]))
cfg = dict(r["config"]) if isinstance(r["config"], dict) else dict(r["config"])
steps = [json.loads(l) for l in open(sys.argv[2]) if l.strip()]
secs = [s.get("step_seconds") for s in steps if isinstance(s.get("step_seconds"), (int, float))]
med = sorted(secs)[len(secs) // 2] if secs else float("nan")
print(f'{cfg.get("kernel", "?"):10s} seed {cfg.get("seed", "?")} device {r.get("device", "?")}'
      f' steps {r["steps_done"]} median step {med * 1e3:.1f} ms collapsed {r["collapsed"]}')
PY
  done
  "${services_env[@]}" "$bin/tailsweep" status gpu-check --format json |
    python3 -c 'import json,sys; d=json.load(sys.stdin); sys.exit(0 if d.get("done") == 8 else 1)'
}
export -f sweep
step sweep 240 sweep
{
  echo "== sweep gpu-check: tailsweep results"
  cat "$logs/results_table.txt" 2> /dev/null
  grep -A20 '== each job' "$logs/sweep.log" 2> /dev/null
} >> "$results"

# 5. The paper-size step, then FlexAttention at the same shapes.
if [ $rehearse = 1 ]; then
  size=(--n 256 --d 32 --heads 4 --batch 1)
  step_bench=(--device cpu "${size[@]}" --layers 2 --warmup 1 --reps 2)
  flex=(--device cpu "${size[@]}" --warmup 1 --reps 2)
else
  step_bench=(--device cuda:0 --warmup 1 --reps 3)
  flex=(--device cuda --warmup 2 --reps 5)
fi
step step_bench 200 "$build/bin/gpu_step_bench" "${step_bench[@]}"
{
  echo "== gpu_step_bench (tailsweep's step and KernelAttention)"
  grep -v '^{' "$logs/step_bench.log"
} >> "$results"
step flex 200 python3 "$src/bench/gpu/flex_baseline.py" "${flex[@]}"
{
  echo "== FlexAttention (torch.compile, score_mod = log phi): attention fwd+bwd"
  python3 - "$logs/flex.log" << 'PY'
import json, sys
for line in open(sys.argv[1]):
    try:
        r = json.loads(line)
    except ValueError:
        continue
    if "skipped" in r:
        print("  skipped:", r["skipped"]); continue
    print(f'  {r["kernel"]:10s} {r["precision"]:9s} '
          + (f'attention {r["attention_ms"]:10.2f} ms  peak {r["peak_mib"]} MiB'
             if "attention_ms" in r else f'failed: {r.get("error")}'))
PY
} >> "$results"
cat "$results" >> "$summary"
exit "$failed"
