#!/usr/bin/env bash
# `tailsweep slurm up` on a real Slurm: a single-node cluster from Debian's
# slurmctld, slurmd and munge (slurm_cluster.sh: loopback, 4 CPUs and 2
# placeholder GPUs in GRES), sweeps/smoke.yaml's model with 4 jobs of 1200
# steps (long enough to be caught mid-training), 2 worker tasks of one GPU
# and one CPU each. Once both tasks are mid-job, at once: scancel of one
# worker task and a drain (scancel --full --signal=USR1) of the other, which
# requeues itself; then scontrol requeue of the coordinator job. Then: every job done exactly
# once, none failed, the interrupted ones preempted; each job's child saw
# exactly its slot's GPU of its allocation (CUDA_VISIBLE_DEVICES) and one
# thread. Prints the time from `slurm up` to the first running job.
# The GPUs are stand-ins: a `tailsweep-lab` shim lists the allocation's GPUs as
# `lab devices` would on a CUDA build, records what each job sees, and trains
# on the CPU. Needs root; installs Slurm itself. Exit 77: skipped.
# Every wait is for an event (a state in the database, a checkpoint file, a
# job gone from the queue) under the shared deadline (wait_until,
# slurm_cluster.sh), never for a guessed number of seconds.
#   slurm_test.sh SOURCE_DIR BIN_DIR
set -euo pipefail
src=$(cd "$1" && pwd)
bin=$(cd "$2" && pwd)
if [ "$(id -u)" -ne 0 ]; then echo "SKIP: a test Slurm needs root"; exit 77; fi
"$src/deploy/install-deps.sh" --with slurm >/dev/null

tmp=$(mktemp -d /tmp/tailsweep-slurm-XXXXXX)
cluster="$src/tests/deploy/slurm_cluster.sh"
. "$cluster"  # wait_until
no_jobs_left() { [ -z "$(squeue -h -o %i 2>/dev/null)" ]; }
cleanup() {
  scancel --user=root 2>/dev/null || true
  wait_until no_jobs_left || true
  "$cluster" stop "$tmp/slurm" || true
  if [ "${KEEP:-0}" = 1 ]; then echo "kept $tmp"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
SLURM_CONF=$("$cluster" start "$tmp/slurm" 4 2)
export SLURM_CONF

# The stand-in for a CUDA build of tailsweep-lab.
mkdir -p "$tmp/bin"
ln -s "$bin/tailsweep" "$bin/tailsweep-coordinator" "$bin/tailsweep-worker" \
  "$tmp/bin/"
cat > "$tmp/bin/tailsweep-lab" <<SHIM
#!/usr/bin/env bash
real="$bin/tailsweep-lab"
if [ "\$*" = "lab devices" ]; then
  if [ -n "\${CUDA_VISIBLE_DEVICES:-}" ]; then
    n=\$(tr ',' '\n' <<< "\$CUDA_VISIBLE_DEVICES" | grep -c .)
    printf '{"devices": ['; for i in \$(seq 0 \$((n - 1))); do
      [ "\$i" -gt 0 ] && printf ', '; printf '"cuda:%d"' "\$i"; done
    echo ']}'
  else
    echo '{"devices": ["cpu"]}'
  fi
  exit 0
fi
args=(); out=""; threads=""; prev=""
for a in "\$@"; do
  [ "\$prev" = --out-dir ] && out=\$a
  [ "\$prev" = --threads ] && threads=\$a
  if [ "\$prev" = --device ] && [ "\$a" = cuda ]; then a=cpu; fi
  args+=("\$a"); prev=\$a
done
if [ -n "\$out" ]; then
  echo "cvd=\${CUDA_VISIBLE_DEVICES-unset} step_gpus=\${SLURM_STEP_GPUS-\${SLURM_JOB_GPUS-unset}} threads=\$threads omp=\${OMP_NUM_THREADS-unset} job=\${SLURM_JOB_ID-unset}" >> "\$out/seen.txt"
fi
exec "\$real" "\${args[@]}"
SHIM
chmod +x "$tmp/bin/tailsweep-lab"
export TAILSWEEP_BIN_DIR="$tmp/bin"
# Each task's job directories: $TMPDIR/tailsweep-SLURM_JOB_ID (workers.sbatch).
mkdir -p "$tmp/work"
export TMPDIR="$tmp/work" OPENBLAS_NUM_THREADS=1
sed -e 's/^name: smoke/name: slurm-test/' -e 's/steps: 100/steps: 1200/' \
  -e 's/checkpoint_every: 50/checkpoint_every: 100/' \
  -e '/operator:/d' -e '/marginal:/d' -e '/norm:/d' -e '/symlog:/d' \
  -e '/^exclude:/,/^fixed:/{/^fixed:/!d}' \
  "$src/sweeps/smoke.yaml" > "$tmp/spec.yaml"
total=4
run="$tmp/run"
ts() { "$bin/tailsweep" --run-dir "$run" "$@"; }
count() {  # count STATE: jobs of the sweep in that state
  ts status slurm-test --format json 2>/dev/null |
    python3 -c "import json,sys; d=json.load(sys.stdin); print(d.get('$1', 0))" 2>/dev/null || echo 0
}
fail() { echo "FAIL: $*"; for f in "$run"/*.log; do echo "== $f"; tail -30 "$f"; done; exit 1; }

start=$(date +%s.%N)
"$bin/tailsweep" slurm up "$tmp/spec.yaml" --workers 2 --gpus-per-node 1 \
  --cpus-per-worker 1 --time 30 --run-dir "$run" \
  --wait "${TAILSWEEP_TEST_DEADLINE_S:-300}" || fail "slurm up"
read -r _ coord < <(grep coordinator "$run/slurm-jobs")
read -r _ array < <(grep workers "$run/slurm-jobs")
running() { [ "$(count leased)" -gt 0 ]; }
wait_until running || fail "no job ran"
echo "measure: slurm up to the first running job: $(echo "$(date +%s.%N) - $start" | bc) s"
stat -c '%a %n' "$run" "$run/token" "$run/ca.key" "$run/server.key"
[ "$(stat -c %a "$run")" = 700 ] || fail "run directory not 0700"
for f in token ca.key server.key; do
  [ "$(stat -c %a "$run/$f")" = 600 ] || fail "$f not 0600"
done

# A job of array task $1 past its first checkpoint with most of its steps
# still to go (its newest checkpoint at step 100 to 500 of 1200: 700 steps
# or more left), so the fault that follows lands in it, not in the next job.
mid_job() {
  local id dir
  id=$(squeue -h -j "${array}_$1" -o %A 2>/dev/null | head -1)
  [ -n "$id" ] || return 1
  for dir in "$tmp/work/tailsweep-$id"/*/; do
    [ -e "$dir/result.json" ] && continue
    step=$(ls "$dir"checkpoints 2>/dev/null | sed -n 's/^step-0*\([0-9]*\)\.pt$/\1/p' | sort -n | tail -1)
    [ -n "$step" ] && [ "$step" -ge 100 ] && [ "$step" -le 500 ] && return 0
  done
  return 1
}
both_mid_job() { mid_job 0 && mid_job 1; }
# Faults, both at once while each task is mid-job (so they hit two jobs,
# each with a checkpoint): kill one worker task (scancel: SIGTERM, then
# SIGKILL after KillWait), drain the other (it requeues itself); then
# requeue the coordinator. (One fault at a time, each waiting for its own
# task's next job, let the second land on the job the first had sent back,
# freshly resumed there, under load.)
wait_until both_mid_job || fail "the two tasks were never mid-job at once"
scancel "${array}_0"
scancel --full --signal=USR1 "${array}_1"
echo "scancelled ${array}_0, drained ${array}_1; then $(count done) done, $(count leased) running"
# The drained job given back before the coordinator goes (with the
# coordinator away the drain would end as a lapsed lease instead).
db="$run/tailsweep.db"
q() { sqlite3 "file:$db?mode=ro" "$1"; }
drain_given_back() {
  [ "$(q "SELECT COUNT(*) FROM events WHERE kind = 'preempted' AND detail LIKE 'drained%'" 2>/dev/null || echo 0)" -ge 1 ]
}
wait_until drain_given_back || fail "the drained task's job was not given back"
echo "requeue coordinator $coord with $(count done) done"
scontrol requeue "$coord"

# Every job done: each next one under the deadline, not all of them (how
# long the sweep takes depends on the machine; that it makes progress does
# not).
done_now=$(count done)
more_done() { [ "$(count done)" -gt "$done_now" ]; }
while [ "$done_now" -lt "$total" ]; do
  wait_until more_done || break
  done_now=$(count done)
done
ts status slurm-test || true
[ "$(count done)" -eq "$total" ] || fail "the sweep did not finish: $(count done) of $total done"
[ "$(count failed)" -eq 0 ] || fail "failed jobs"
# The HTTP API as a notebook reaches it after the requeue: the run
# directory's http_address, token and CA (Client.from_run_dir).
grep -q '^https://' "$run/http_address" || fail "no http_address"
PYTHONPATH="$src/python" /usr/bin/python3 -c '
import sys, tailsweep
s = tailsweep.Client.from_run_dir(sys.argv[1]).sweep("slurm-test").status()
assert s["counts"]["done"] == int(sys.argv[2]), s
print("HTTP API at", open(sys.argv[1] + "/http_address").read().strip(), "ok")
' "$run" "$total" || fail "the HTTP API through http_address"
twice=$(q "SELECT COUNT(*) FROM (SELECT job_id FROM events WHERE kind = 'done' GROUP BY job_id HAVING COUNT(*) > 1)")
[ "$twice" -eq 0 ] || fail "$twice job(s) done twice"
preempted=$(q "SELECT COUNT(*) FROM events WHERE kind = 'preempted'")
echo "preempted events: $preempted ($(q "SELECT GROUP_CONCAT(DISTINCT detail) FROM events WHERE kind = 'preempted'"))"
[ "$(q "SELECT COUNT(*) FROM events WHERE kind = 'failed'")" -eq 0 ] || fail "a failed event"
[ "$(q "SELECT COUNT(*) FROM events WHERE kind = 'preempted' AND detail LIKE 'preempted (SIGTERM)%'")" -ge 1 ] ||
  fail "the scancelled task's job was not preempted"
[ "$(q "SELECT COUNT(*) FROM events WHERE kind = 'preempted' AND detail LIKE 'drained (SIGUSR1)%'")" -ge 1 ] ||
  fail "the drained task's job was not preempted"
resumed=$(cat "$tmp"/work/*/*/result.json | grep -o '"resumed_from_step": *[0-9]*' | awk -F: '$2 > 0' | wc -l)
echo "jobs resumed from a checkpoint: $resumed"
[ "$resumed" -ge 2 ] || fail "the interrupted jobs did not resume from their checkpoints"

# What each job's child saw.
seen=$(cat "$tmp"/work/*/*/seen.txt 2>/dev/null || cat "$tmp"/work*/*/seen.txt)
echo "$seen" | sort | uniq -c | sort -rn | head -5
echo "$seen" | while read -r cvd step threads omp job; do
  [ "${cvd#cvd=}" = "${step#step_gpus=}" ] || fail "a job saw $cvd, its step has $step"
  case "${cvd#cvd=}" in 0|1) ;; *) fail "a job saw $cvd" ;; esac
  [ "$threads" = threads=1 ] && [ "$omp" = omp=1 ] || fail "a job ran $threads $omp on 1 CPU"
done
[ "$(echo "$seen" | awk '{print $1}' | sort -u | wc -l)" -eq 2 ] || fail "the two tasks' jobs did not see two GPUs"
[ -e "$run/down" ] && fail "down exists before slurm down"
"$bin/tailsweep" slurm down "$run" --wait 30
[ -e "$run/down" ] || fail "slurm down left no marker"
echo "PASS"
