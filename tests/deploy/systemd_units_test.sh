#!/usr/bin/env bash
# deploy/systemd's units, checked as systemd would load them: each passes
# `systemd-analyze verify` with its binaries where `cmake --install` puts them
# (here: the build's, put in their place), the worker template as an
# instance, and every TAILSWEEP_* variable the units set is one the daemon
# reads (its --help lists it). Usage: systemd_units_test.sh SOURCE_DIR BIN_DIR
set -euo pipefail
src=$1
bin=$2
units="$src/deploy/systemd"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

for unit in tailsweep-coordinator.service "tailsweep-worker@.service"; do
  sed "s#/usr/local/bin/#$bin/#g" "$units/$unit" > "$tmp/$unit"
done
cp "$tmp/tailsweep-worker@.service" "$tmp/tailsweep-worker@main.service"
for unit in tailsweep-coordinator.service "tailsweep-worker@main.service"; do
  if ! out=$(cd "$tmp" && systemd-analyze verify "./$unit" 2>&1); then
    echo "FAIL: systemd-analyze verify $unit:"
    echo "$out"
    fail=1
  else
    echo "ok: systemd-analyze verify $unit"
  fi
done

# The variables each unit sets, against its daemon's --help.
check_env() {
  local unit=$1 daemon=$2 help
  help=$("$bin/$daemon" --help)
  for var in $(grep -o 'TAILSWEEP_[A-Z_]*=' "$units/$unit" | tr -d = | sort -u); do
    if ! grep -q "$var" <<< "$help"; then
      echo "FAIL: $unit sets $var, which $daemon does not read"
      fail=1
    fi
  done
}
check_env tailsweep-coordinator.service tailsweep-coordinator
check_env "tailsweep-worker@.service" tailsweep-worker

# What the issue asks of both: a service user, a read-only system but the
# state directory, restart on failure, SIGTERM as the graceful stop.
for unit in tailsweep-coordinator.service "tailsweep-worker@.service"; do
  for line in User=tailsweep ProtectSystem=strict StateDirectory= \
      Restart=on-failure KillSignal=SIGTERM; do
    if ! grep -q "^$line" "$units/$unit"; then
      echo "FAIL: $unit has no $line"
      fail=1
    fi
  done
done
exit $fail
