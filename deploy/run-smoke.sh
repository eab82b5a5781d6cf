#!/usr/bin/env bash
# The main job: a small real sweep end to end on this machine. Starts a
# coordinator (embedded SQLite under $DIR) and one local worker, submits
# sweeps/smoke.yaml, shows progress, prints the results table, and stops the
# services it started, also on failure or Ctrl-C.
#
#   deploy/run-smoke.sh [SPEC.yaml]     (default: sweeps/smoke.yaml)
#
# Environment: TAILSWEEP_BUILD (default build), TAILSWEEP_SMOKE_DIR (default
# runs/smoke), TAILSWEEP_PORT (default 50551), TAILSWEEP_SLOTS (default 2).
# The run is self-contained: the connection settings of a shell that talks to
# another coordinator (TAILSWEEP_RUN_DIR, TAILSWEEP_TLS_CA,
# TAILSWEEP_TOKEN_FILE) are ignored here.
set -euo pipefail
cd "$(dirname "$0")/.."
spec="${1:-sweeps/smoke.yaml}"
bin="${TAILSWEEP_BUILD:-build}/bin"
dir="${TAILSWEEP_SMOKE_DIR:-runs/smoke}"
port="${TAILSWEEP_PORT:-50551}"
slots="${TAILSWEEP_SLOTS:-2}"
unset TAILSWEEP_RUN_DIR TAILSWEEP_TLS_CA TAILSWEEP_TOKEN_FILE
export TAILSWEEP_COORDINATOR="127.0.0.1:${port}"
mkdir -p "$dir"

pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
}
trap cleanup EXIT INT TERM

"$bin/tailsweep-coordinator" --db "$dir/tailsweep.db" --data-dir "$dir/data" \
  --listen "$TAILSWEEP_COORDINATOR" 2>"$dir/coordinator.log" &
pids+=($!)
"$bin/tailsweep-worker" --devices cpu --slots-per-device "$slots" \
  --threads-per-slot 1 --work-dir "$dir/work" 2>"$dir/worker.log" &
pids+=($!)

# Wait until the coordinator answers (submit retries while it starts).
name=""
for _ in $(seq 1 50); do
  if out=$("$bin/tailsweep" submit "$spec" 2>"$dir/submit.err"); then
    echo "$out"
    name=$(echo "$out" | sed -n 's/^sweep \([^:]*\):.*/\1/p')
    break
  fi
  if ! grep -q unreachable "$dir/submit.err"; then cat "$dir/submit.err" >&2; exit 2; fi
  sleep 0.2
done
[ -n "$name" ] || { cat "$dir/submit.err" >&2; exit 1; }

"$bin/tailsweep" watch "$name" --interval 1
"$bin/tailsweep" report "$name" --out "$dir/report" 2>/dev/null
"$bin/tailsweep" results "$name"
echo "database: $dir/tailsweep.db (schema in docs/cli.md); logs: $dir/*.log"
echo "report: $dir/report/report.html (figures per cell; opens offline)"
