#!/usr/bin/env bash
# Jobs per second through the Slurm kit against a local run, side by side in
# one run: the same JOBS short jobs (a 5-step model of 64 points, about a
# second of training each, mostly process start-up) run first by a local
# coordinator and one worker of 2 slots, then by `tailsweep slurm up
# --workers 2 --cpus-per-worker 1` on a single-node Slurm that this script
# starts (tests/deploy/slurm_cluster.sh: loopback, 4 CPUs declared on this
# machine). Prints each one's wall time from start to the last job done,
# jobs per second, and for Slurm also the time to the first running job.
# Needs root; installs Slurm itself (deploy/install-deps.sh --with slurm).
#   bench/slurm_jobs_bench.sh SOURCE_DIR BIN_DIR [JOBS]   (JOBS default 40)
set -euo pipefail
src=$(cd "${1:?SOURCE_DIR}" && pwd)
bin=$(cd "${2:?BIN_DIR}" && pwd)
jobs=${3:-40}
if [ "$(id -u)" -ne 0 ]; then echo "slurm_jobs_bench: needs root" >&2; exit 2; fi
"$src/deploy/install-deps.sh" --with slurm >/dev/null

tmp=$(mktemp -d /tmp/tailsweep-slurm-bench-XXXXXX)
cluster="$src/tests/deploy/slurm_cluster.sh"
local_pid=""
cleanup() {
  [ -n "$local_pid" ] && kill "$local_pid" 2>/dev/null
  scancel --user=root 2>/dev/null || true
  sleep 1
  "$cluster" stop "$tmp/slurm" >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT
export OPENBLAS_NUM_THREADS=1

seeds=$(seq -s, 0 $((jobs - 1)))
spec() {  # spec NAME
  cat <<EOF
name: $1
kind: train
grid: {seed: [$seeds]}
fixed: {n_points: 64, layers: 1, d_model: 16, heads: 2, steps: 5, batch: 1,
        warmup: 1, log_every: 5, checkpoint_every: 5, eval_instances: 2,
        reference_trials: 1}
EOF
}
now() { date +%s.%N; }
since() { echo "$(now) - $1" | bc; }
done_count() {  # done_count NAME TAILSWEEP_ARGS...
  local name=$1; shift
  "$bin/tailsweep" "$@" status "$name" --format json 2>/dev/null |
    python3 -c "import json,sys; print(json.load(sys.stdin).get('done', 0))" 2>/dev/null ||
    echo 0
}
wait_done() {  # wait_done NAME TAILSWEEP_ARGS...: until all are done (10 min)
  for _ in $(seq 3000); do
    [ "$(done_count "$@")" -ge "$jobs" ] && return 0
    sleep 0.2
  done
  echo "slurm_jobs_bench: $1 did not finish within 10 min" >&2
  exit 1
}

# Local: one coordinator, one worker with 2 slots.
spec bench-local > "$tmp/local.yaml"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$bin/tailsweep-coordinator" --db "$tmp/local.db" --data-dir "$tmp/local-data" \
  --listen "127.0.0.1:$port" > "$tmp/local-coordinator.log" 2>&1 &
local_pid=$!
sleep 1
start=$(now)
"$bin/tailsweep" --coordinator "127.0.0.1:$port" submit "$tmp/local.yaml" >/dev/null
"$bin/tailsweep-worker" --coordinator "127.0.0.1:$port" --devices cpu \
  --slots-per-device 2 --threads-per-slot 1 --work-dir "$tmp/local-work" \
  --exit-when-idle > "$tmp/local-worker.log" 2>&1
wait_done bench-local --coordinator "127.0.0.1:$port"
local_s=$(since "$start")
kill "$local_pid"; local_pid=""

# Slurm: the kit, 2 array tasks of one CPU each.
SLURM_CONF=$("$cluster" start "$tmp/slurm" 4 0)
export SLURM_CONF TAILSWEEP_BIN_DIR="$bin" TMPDIR="$tmp"
spec bench-slurm > "$tmp/slurm.yaml"
run="$tmp/run"
start=$(now)
"$bin/tailsweep" slurm up "$tmp/slurm.yaml" --workers 2 --cpus-per-worker 1 \
  --time 30 --run-dir "$run" --wait 120 >/dev/null
first=""
for _ in $(seq 600); do
  if "$bin/tailsweep" --run-dir "$run" status bench-slurm --format json 2>/dev/null |
      python3 -c "import json,sys; d=json.load(sys.stdin); sys.exit(0 if d.get('leased',0)+d.get('done',0) > 0 else 1)"; then
    first=$(since "$start"); break
  fi
  sleep 0.1
done
wait_done bench-slurm --run-dir "$run"
slurm_s=$(since "$start")
"$bin/tailsweep" slurm down "$run" --wait 30 >/dev/null || true

printf '%d jobs of 5 steps, 2 slots of 1 thread each, in one run\n' "$jobs"
printf '%-28s %10s %10s\n' "" "seconds" "jobs/s"
printf '%-28s %10.1f %10.2f\n' "local worker (2 slots)" "$local_s" "$(echo "$jobs / $local_s" | bc -l)"
printf '%-28s %10.1f %10.2f\n' "slurm up --workers 2" "$slurm_s" "$(echo "$jobs / $slurm_s" | bc -l)"
printf 'slurm: first job running after %.1f s; jobs/s after it: %.2f; slurm/local time %.2fx\n' \
  "${first:-nan}" "$(echo "$jobs / ($slurm_s - ${first:-0})" | bc -l)" \
  "$(echo "$slurm_s / $local_s" | bc -l)"
