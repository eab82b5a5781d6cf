#!/usr/bin/env bash
# deploy/check-release.sh [--root DIR] [--keep] TARBALL: proves the release
# runs where its users are: in a bare Debian 12 root (debootstrap
# --variant=minbase: no compiler, no -dev package, Python's standard library
# only), as a user without root, from a folder of the user's own.
#
# As root it makes (or reuses) the root, adds python3 (the interpreter and
# its standard library only) and a user `researcher`; then, as that user:
# unpacks TARBALL, starts a coordinator (HTTP on loopback) and a worker
# (--devices auto: no GPU and no nvidia-smi here, so cpu, saying why),
# submits a `kind: command` sweep of a shell script, waits for it with
# tailsweep.Client over HTTP and reads its results. It prints the seconds
# from unpacking to the results read (the goal: under 60) and the archive's
# size (under 60 MB); then it runs the launcher from a read-only copy and
# with a too-old glibc floor, which must fail with a plain message.
# Run as root. The root stays with --keep (default /var/tmp/tailsweep-bare).
set -euo pipefail
root=/var/tmp/tailsweep-bare
keep=no
tarball=""
while [ $# -gt 0 ]; do
  case "$1" in
    --root) root=${2:?--root needs a folder}; shift 2 ;;
    --keep) keep=yes; shift ;;
    -h | --help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "check-release: unknown option '$1' (see --help)" >&2; exit 2 ;;
    *) tarball=$(readlink -f "$1"); shift ;;
  esac
done
[ -f "$tarball" ] || {
  echo "check-release: give the release archive (deploy/release.sh makes it)" >&2
  exit 2
}
[ "$(id -u)" -eq 0 ] || { echo "check-release: run as root (chroot)" >&2; exit 2; }

mounted=()
cleanup() {
  for m in "${mounted[@]}"; do umount -l "$m" 2> /dev/null || true; done
  [ "$keep" = yes ] || rm -rf "$root"
}
trap cleanup EXIT
if [ ! -x "$root/usr/bin/apt-get" ]; then
  command -v debootstrap > /dev/null || {
    echo "check-release: debootstrap is missing (./deploy/install-deps.sh --with release)" >&2
    exit 2
  }
  echo "check-release: debootstrap --variant=minbase bookworm $root"
  debootstrap --variant=minbase bookworm "$root" http://deb.debian.org/debian > /dev/null
fi
for m in proc sys dev; do
  mkdir -p "$root/$m"
  mount --rbind "/$m" "$root/$m"
  mounted=("$root/$m" "${mounted[@]}")
done
cp /etc/resolv.conf "$root/etc/resolv.conf"
# A TLS-intercepting proxy's certificates, for apt's HTTPS mirrors.
if ls /usr/local/share/ca-certificates/*.crt > /dev/null 2>&1; then
  mkdir -p "$root/usr/local/share/ca-certificates"
  cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/"
fi
in_root() { chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root "$@"; }
if [ ! -x "$root/usr/bin/python3" ]; then
  echo "check-release: python3 (standard library only) into the root"
  in_root apt-get update -qq > /dev/null
  in_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
    --no-install-recommends python3-minimal libpython3-stdlib python3 > /dev/null
fi
for tool in gcc g++ cc; do
  if [ -e "$root/usr/bin/$tool" ]; then
    echo "check-release: the root has $tool: not bare" >&2
    exit 1
  fi
done
in_root id researcher > /dev/null 2>&1 || in_root useradd -m researcher
home=$root/home/researcher
rm -rf "${home:?}"/*
cp "$tarball" "$home/"
chown "$(in_root id -u researcher):$(in_root id -g researcher)" "$home/$(basename "$tarball")"

cat > "$home/run.sh" << 'SCRIPT'
#!/bin/sh
# As the user, in a folder of their own: unpack, start, sweep, read.
set -eu
cd "$HOME"
start=$(date +%s.%N)
tar -xzf tailsweep-*-linux-x86_64.tar.gz
top=$(ls -d tailsweep-*/ | head -n1)
export PATH="$HOME/${top}bin:$PATH" PYTHONPATH="$HOME/${top}python"
mkdir -p run && cd run
tailsweep-coordinator --db sweeps.db --data-dir data --listen 127.0.0.1:50591 \
  --http-listen 127.0.0.1:50592 2> coordinator.log &
coordinator=$!
tailsweep-worker --coordinator 127.0.0.1:50591 --devices auto \
  --slots-per-device 2 --work-dir work 2> worker.log &
worker=$!
trap 'kill "$worker" "$coordinator" 2> /dev/null || true' EXIT
cat > job.sh << 'JOB'
#!/bin/sh
x=$(tr -d ' \n' < "$TAILSWEEP_PARAMS_FILE" | sed 's/.*"x":\([0-9]*\).*/\1/')
for step in 1 2 3; do
  echo "{\"step\": $step, \"loss\": $((x * step))}" >> "$TAILSWEEP_METRICS_FILE"
done
JOB
chmod +x job.sh
cat > spec.yaml << 'SPEC'
name: bare
kind: command
command: [./job.sh]
grid:
  x: [1, 2, 3, 4]
SPEC
i=0
until tailsweep submit spec.yaml --coordinator 127.0.0.1:50591 > submit.log 2>&1; do
  i=$((i + 1)); [ $i -lt 100 ] || { cat submit.log; exit 1; }; sleep 0.1
done
python3 - << 'PY'
import tailsweep
c = tailsweep.Client("http://127.0.0.1:50592")
s = c.sweep("bare")
s.wait(poll=0.2, timeout=60)
rows = s.results(output="records")
losses = sorted(r["summary.loss.last"] for r in rows)
assert losses == [3, 6, 9, 12], rows
print("results (the last loss of each job):", losses)
PY
end=$(date +%s.%N)
echo "seconds from unpacking to the results read: $(echo "$start $end" | awk '{printf "%.1f", $2 - $1}')"
grep -o -- "--devices auto: .*" worker.log | head -n1
kill "$worker" "$coordinator"; wait || true
trap - EXIT
# A read-only copy runs (nothing is written beside the programs).
cd "$HOME" && cp -r "$top" ro && chmod -R a-w ro && ro/bin/tailsweep --version
# A system older than the floor: a plain message, exit 127.
sed 's/^need=.*/need=9.99/' "${top}bin/tailsweep" > old-glibc && chmod +x old-glibc
cp old-glibc "${top}bin/old-glibc" 2> /dev/null || true
if "${top}bin/old-glibc" --version 2> old.err; then echo "old glibc ran" >&2; exit 1; fi
cat old.err
SCRIPT
chmod 755 "$home/run.sh"
echo "check-release: $(basename "$tarball"), $(du -m "$tarball" | cut -f1) MB," \
  "as user researcher in $root"
in_root su researcher -c /home/researcher/run.sh
