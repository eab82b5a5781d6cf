#!/usr/bin/env bash
# A single-node Slurm for tests, on loopback, everything under DIR: munged
# with its own key and socket, slurmctld and slurmd on ports of their own
# (proctrack/linuxproc, task/none: no systemd, no cgroups needed), one
# partition `test` of this machine with CPUS cores and, with GPUS > 0, that
# many GPUs in GRES backed by placeholder device files (DIR/dev/gpuN:
# character devices that are /dev/null's, so Slurm hands them out and sets
# CUDA_VISIBLE_DEVICES as for real GPUs).
# Needs root and `deploy/install-deps.sh --with slurm`.
#   slurm_cluster.sh start DIR [CPUS] [GPUS]   prints the SLURM_CONF to export
#   slurm_cluster.sh stop DIR
# Sourced (`. slurm_cluster.sh`), it only defines wait_until for the tests.

# wait_until CMD [ARG...]: runs CMD every 0.2 s until it succeeds (then 0)
# or the deadline passes (then 1, after one last try). The deadline is the
# C++ tests' (tests/testing/wait.h): TAILSWEEP_TEST_DEADLINE_S, 300 s by
# default, only there to end a wait whose event never comes. Tests wait for
# the event itself (a state, a file, a process gone), never for a guessed
# number of seconds: a loaded CI machine takes ten times as long.
wait_until() {
  local deadline=$(( $(date +%s) + ${TAILSWEEP_TEST_DEADLINE_S:-300} ))
  until "$@"; do
    [ "$(date +%s)" -lt "$deadline" ] || { "$@"; return; }
    sleep 0.2
  done
}
if [ "${BASH_SOURCE[0]}" != "$0" ]; then return 0; fi

set -euo pipefail
cmd=${1:?usage: slurm_cluster.sh start|stop DIR [CPUS] [GPUS]}
dir=$(mkdir -p "${2:?DIR}" && cd "$2" && pwd)
cpus=${3:-$(nproc)}
gpus=${4:-0}

gone() { ! kill -0 "$1" 2>/dev/null; }
# Each daemon asked to stop (SIGTERM) and waited for; one that does not stop
# within the deadline is killed (-9) and waited for.
stop() {
  for pidfile in "$dir"/slurmd.pid "$dir"/slurmctld.pid "$dir"/munge/munged.pid; do
    [ -f "$pidfile" ] || continue
    pid=$(cat "$pidfile")
    kill "$pid" 2>/dev/null || true
    if ! wait_until gone "$pid"; then
      kill -9 "$pid" 2>/dev/null || true
      wait_until gone "$pid" || true
    fi
    rm -f "$pidfile"
  done
}

if [ "$cmd" = stop ]; then stop; exit 0; fi
[ "$cmd" = start ] || { echo "slurm_cluster.sh: unknown command '$cmd'" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "slurm_cluster.sh: needs root" >&2; exit 2; }
for tool in munged slurmctld slurmd sinfo; do
  command -v "$tool" >/dev/null || {
    echo "slurm_cluster.sh: $tool missing (deploy/install-deps.sh --with slurm)" >&2; exit 2; }
done
stop
mkdir -p "$dir"/{munge,state,spool,log,dev}
chmod 700 "$dir/munge"

# Ports of our own, from a range few services use.
free_port() {
  local p
  for p in $(shuf -i 20000-29999 -n 50); do
    if ! (exec 3<>/dev/tcp/127.0.0.1/$p) 2>/dev/null; then echo "$p"; return; fi
  done
  return 1
}
ctld_port=$(free_port)
slurmd_port=$(free_port)

dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$dir/munge/munge.key"
munged --force --key-file="$dir/munge/munge.key" \
  --socket="$dir/munge/munge.socket" --pid-file="$dir/munge/munged.pid" \
  --log-file="$dir/munge/munged.log" --seed-file="$dir/munge/munged.seed"

host=$(hostname -s)
gres_line=""
if [ "$gpus" -gt 0 ]; then
  : > "$dir/gres.conf"
  for i in $(seq 0 $((gpus - 1))); do
    rm -f "$dir/dev/gpu$i"
    mknod "$dir/dev/gpu$i" c 1 3
    echo "NodeName=$host Name=gpu File=$dir/dev/gpu$i" >> "$dir/gres.conf"
  done
  gres_line="Gres=gpu:$gpus"
fi
mem=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 / 2 ))
cat > "$dir/slurm.conf" <<CONF
ClusterName=tailsweep-test
SlurmctldHost=$host(127.0.0.1)
# CPUS may exceed the machine's cores: the test's jobs are light.
SlurmdParameters=config_overrides
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
# cred_expire: a requeued job waits this long before it may start again
# (slurm.conf(5); 120 s by default, most of the test's time); 20 s still
# leaves a loaded machine time to launch a step.
AuthInfo=socket=$dir/munge/munge.socket,cred_expire=20
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
MpiDefault=none
ReturnToService=2
JobRequeue=1
KillWait=30
MinJobAge=600
SchedulerParameters=sched_interval=1
GresTypes=gpu
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN $gres_line
PartitionName=test Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
CONF
export SLURM_CONF="$dir/slurm.conf"
slurmctld -f "$SLURM_CONF"
slurmd -f "$SLURM_CONF"
node_up() { sinfo -h -o %T 2>/dev/null | grep -qE '^(idle|mixed|allocated)'; }
if wait_until node_up; then
  echo "$SLURM_CONF"
  exit 0
fi
echo "slurm_cluster.sh: the node did not come up; logs in $dir/log" >&2
sinfo >&2 || true
for pidfile in "$dir"/slurmctld.pid "$dir"/slurmd.pid "$dir"/munge/munged.pid; do
  if [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
    echo "$(basename "$pidfile" .pid): running" >&2
  else
    echo "$(basename "$pidfile" .pid): not running" >&2
  fi
done
# One file at a time: GNU tail takes the short -N form for one file only.
for log in "$dir"/log/*.log "$dir"/munge/munged.log; do
  [ -f "$log" ] && { echo "== $log" >&2; tail -n 40 "$log" >&2; }
done
exit 1
