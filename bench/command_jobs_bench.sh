#!/usr/bin/env bash
# What a command job costs the coordinator and the worker (issue 36's goals),
# with the real executables on loopback, side by side in one run:
#  1. overhead: JOBS command jobs whose program exits at once (/bin/true), one
#     worker with SLOTS slots: the coordinator's and the worker's CPU time
#     (user + sys) per job, and the wall time per job;
#  2. ingestion: one job whose child writes LINES metrics lines at once (the
#     train child's own line: 5 scalars and 2 per-layer lists), run as a
#     command job and as a train job (a stand-in lab program that writes the
#     same lines and a real train result): coordinator + worker CPU time and
#     points stored per second of it, and the wall time from start to done.
# CPU times are read from /proc (the coordinator, before it stops) and
# /usr/bin/time (the worker, which exits when idle); both include the
# processes' start-up, spread over the jobs.
#   bench/command_jobs_bench.sh BIN_DIR [JOBS] [SLOTS] [LINES]
#   (defaults 200 jobs, 2 slots, 20000 lines)
set -euo pipefail
bin=$(cd "${1:?BIN_DIR (e.g. build/bin)}" && pwd)
jobs=${2:-200}
slots=${3:-2}
lines=${4:-20000}
tmp=$(mktemp -d /tmp/tailsweep-command-bench-XXXXXX)
coordinator_pid=""
cleanup() {
  [ -n "$coordinator_pid" ] && kill "$coordinator_pid" 2>/dev/null
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
export OPENBLAS_NUM_THREADS=1
tick=$(getconf CLK_TCK)

# CPU seconds (user + sys) of a running process.
cpu_of() { awk -v t="$tick" '{print ($14 + $15) / t}' "/proc/$1/stat"; }

# run NAME SPEC [worker flags...]: a fresh coordinator, SPEC submitted, one
# worker until the queue is empty. Sets wall, coordinator_cpu, worker_cpu.
run() {
  local name=$1 spec=$2
  shift 2
  local dir="$tmp/$name"
  mkdir -p "$dir"
  local port=$((20000 + RANDOM % 20000))
  export TAILSWEEP_COORDINATOR="127.0.0.1:$port"
  "$bin/tailsweep-coordinator" --db "$dir/db" --data-dir "$dir/data" \
    --listen "$TAILSWEEP_COORDINATOR" 2>"$dir/coordinator.log" &
  coordinator_pid=$!
  for _ in $(seq 1 100); do
    "$bin/tailsweep" submit "$spec" >/dev/null 2>"$dir/submit.err" && break
    sleep 0.1
  done
  "$bin/tailsweep" status >/dev/null 2>&1 || { cat "$dir/submit.err" >&2; exit 1; }
  local before
  before=$(cpu_of "$coordinator_pid")
  local start
  start=$(date +%s.%N)
  /usr/bin/time -f "%U %S" -o "$dir/worker.time" \
    "$bin/tailsweep-worker" --devices cpu --slots-per-device "$slots" \
    --threads-per-slot 1 --work-dir "$dir/work" --exit-when-idle "$@" \
    2>"$dir/worker.log"
  wall=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')
  coordinator_cpu=$(awk -v a="$before" -v b="$(cpu_of "$coordinator_pid")" \
    'BEGIN { print b - a }')
  worker_cpu=$(awk '{print $1 + $2}' "$dir/worker.time")
  points=$(sqlite3 "$dir/db" "SELECT COUNT(*) FROM metrics")
  done_jobs=$(sqlite3 "$dir/db" "SELECT COUNT(*) FROM jobs WHERE state='done'")
  kill "$coordinator_pid"
  wait "$coordinator_pid" 2>/dev/null || true
  coordinator_pid=""
}

# 1. Overhead per command job.
cat >"$tmp/true.yaml" <<EOF
name: overhead
kind: command
command: [/bin/true]
grid:
  x: [$(seq -s, 1 "$jobs")]
EOF
# The worker's rounds come every --poll-ms (default 200): a job that exits
# at once waits for them, so the wall time per job is theirs; the second
# run shows it.
echo "command jobs that exit at once ($jobs jobs, $slots slots):"
for poll in 200 20; do
  run "overhead-$poll" "$tmp/true.yaml" --poll-ms "$poll"
  awk -v c="$coordinator_cpu" -v w="$worker_cpu" -v n="$jobs" -v t="$wall" \
    -v d="$done_jobs" -v p="$poll" \
    'BEGIN { printf "  --poll-ms %3d: %d done; per job: coordinator %.1f ms + worker %.1f ms = %.1f ms CPU; wall %.1f ms\n",
             p, d, 1000 * c / n, 1000 * w / n, 1000 * (c + w) / n, 1000 * t / n }'
done

# 2. Ingestion: the same lines from a command child and from a train child.
line=$(cat <<'EOF'
{"attention_entropy":[1.2185117033534048],"attention_max_weight":[1.0],"grad_norm":1.6529046297073364,"loss":1.0474615097045898,"lr":8.535533905932738e-05,"spread_ratio":1.3839621061546232,"step":STEP,"step_seconds":0.0037942589999602205}
EOF
)
cat >"$tmp/write_lines.py" <<EOF
import os, sys
path, n = sys.argv[1], int(sys.argv[2])
line = '$line'
with open(path, "a") as f:
    for step in range(1, n + 1):
        f.write(line.replace("STEP", str(step)) + "\n")
EOF
# A real train result of the same shape (a 4-step run of a small model).
"$bin/tailsweep-lab" --threads 1 lab train --set steps=4 --set n_points=64 \
  --set layers=1 --set d_model=16 --set heads=2 --set eval_instances=2 \
  --set reference_trials=2 --set warmup=0 --out-dir "$tmp/real" \
  --device cpu >/dev/null 2>&1
cat >"$tmp/fake-lab" <<EOF
#!/bin/sh
# Stands in for tailsweep-lab: writes the lines and the real result.
while [ \$# -gt 0 ]; do
  [ "\$1" = --out-dir ] && out=\$2
  shift
done
python3 "$tmp/write_lines.py" "\$out/metrics.jsonl" $lines
cp "$tmp/real/result.json" "\$out/result.json"
EOF
chmod +x "$tmp/fake-lab"
cat >"$tmp/lines-command.yaml" <<EOF
name: lines
kind: command
command: [python3, $tmp/write_lines.py, "\${job_dir}/metrics.jsonl", "$lines"]
grid: {x: [1]}
EOF
cat >"$tmp/lines-train.yaml" <<EOF
name: lines
grid: {seed: [0]}
fixed: {steps: $lines}
EOF
echo "one job writing $lines metrics lines (7 values each):"
for kind in command train; do
  if [ "$kind" = train ]; then
    run "lines-$kind" "$tmp/lines-$kind.yaml" --lab-bin "$tmp/fake-lab"
  else
    run "lines-$kind" "$tmp/lines-$kind.yaml"
  fi
  awk -v k="$kind" -v c="$coordinator_cpu" -v w="$worker_cpu" -v p="$points" \
    -v t="$wall" -v d="$done_jobs" \
    'BEGIN { printf "  %-7s %d done, %d points stored; CPU coordinator %.2f s + worker %.2f s: %.0f points per CPU-second; wall %.2f s\n",
             k, d, p, c, w, p / (c + w), t }'
done
