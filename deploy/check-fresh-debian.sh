#!/usr/bin/env bash
# Proves that the README's first command (and, with --tests, its second)
# passes on a truly fresh Debian 12: it debootstraps a minimal bookworm root
# (--variant=minbase), copies the project in (the committed tree at HEAD by
# default) and runs, as root inside a chroot, from the copied repository root:
#   1) ./deploy/install-deps.sh && cmake -S . -B build -G Ninja &&
#      cmake --build build --target apps && ./deploy/run-smoke.sh
#   2) (--tests) ./deploy/install-deps.sh --with tests && cmake -S . -B build
#      -G Ninja && cmake --build build && ctest --test-dir build
#      --output-on-failure -j2            (same root, same build folder)
# Each part is a timed step; one line per step, and the log of each step in
# a log folder. The only things added to the bare root are what a standard
# Debian 12 install has and this machine's network needs: sources.list with
# bookworm, -updates and -security, /etc/hosts (localhost and the host
# name), /etc/resolv.conf, the
# ca-certificates package plus this machine's extra CA certificates from
# /usr/local/share/ca-certificates (for a TLS-intercepting proxy; also given
# to Node.js as NODE_EXTRA_CA_CERTS), and the host's apt proxy settings and
# *_proxy variables if it has any.
# The smoke run runs in its own network namespace (loopback only;
# --share-net turns that off), so that its fixed port (50551) cannot meet
# another build's services on this machine, and starts without runs/ (as in
# a fresh clone, also when the root is reused). The tests need the network
# (the Slurm test installs Slurm with apt), so they share the host's; their
# fixed ports (Slurm's 6817/6818, ...) can meet another run of the suite on
# this machine. Every step runs in its own PID
# and mount namespace: /proc, /sys, /dev, /dev/pts and /dev/shm are mounted
# for the chroot there and unmounted on exit (trap), and any process a step
# leaves behind dies with it. The steps run under nice -n 19 and ionice idle,
# but ctest under nice -n 12: a test asks for threads 7 steps nicer than its
# process (Gateway.SlowAndIdleClientsStarveNoOne), which 19 cannot give.
#
# How long it takes (measured 2026-12-07 on 2 cores shared with another
# build, Debian 12 host; lower figure: the other build idle):
#   command 1, new root: debootstrap 27-70 s, prepare 5-10 s, install-deps
#   114-119 s, configure 1-2 s, build-apps 196-360 s, smoke 55-122 s;
#   7-11 min in all.
#   --tests on a root kept from command 1: install-deps --with tests 51 s,
#   configure 0-1 s, build-all 173-282 s, ctest 487-684 s (332 tests);
#   another 15-17 min. A reused --root skips debootstrap and the downloads;
#   a changed tree in it rebuilds (build-apps 105 s with ccache).
#
# Usage: deploy/check-fresh-debian.sh [--tests] [--keep] [--root DIR]
#          [--source DIR | --commit REV] [--log-dir DIR] [--share-net]
set -euo pipefail

usage() {
  cat <<'EOF'
Usage: deploy/check-fresh-debian.sh [options]

Checks that the README's first command (and with --tests its second) passes
on a fresh Debian 12 minbase root made with debootstrap. Run as root.

  --tests         after command 1, run command 2 (the whole test suite)
  --keep          keep the root folder at the end (default: remove it)
  --root DIR      the root folder (default: a new folder under /var/tmp);
                  a DIR that holds a finished debootstrap is reused
  --source DIR    copy the working tree DIR (tracked files plus untracked
                  files git does not ignore) instead of a commit
  --commit REV    copy commit REV of this repository (default: HEAD)
  --log-dir DIR   where the step logs go
                  (default: /var/tmp/tailsweep-fresh-logs-DATE)
  --share-net     run the smoke run in the host's network namespace
                  (default: its own, loopback only)
  -h, --help      this help

Prints one line per step with its seconds; exits non-zero naming the step
that failed.
EOF
}

die() { echo "check-fresh-debian: $*" >&2; exit 2; }

# --- arguments -------------------------------------------------------------
tests=no keep=no root="" source_dir="" commit="" log_dir="" share_net=no
while [ $# -gt 0 ]; do
  case "$1" in
    --tests) tests=yes; shift ;;
    --keep) keep=yes; shift ;;
    --share-net) share_net=yes; shift ;;
    --root|--source|--commit|--log-dir)
      if [ $# -lt 2 ] || [ -z "$2" ]; then die "$1 needs a value (see --help)"; fi
      case "$1" in
        --root) root="$2" ;;
        --source) source_dir="$2" ;;
        --commit) commit="$2" ;;
        --log-dir) log_dir="$2" ;;
      esac
      shift 2 ;;
    --root=*) root="${1#*=}"; shift ;;
    --source=*) source_dir="${1#*=}"; shift ;;
    --commit=*) commit="${1#*=}"; shift ;;
    --log-dir=*) log_dir="${1#*=}"; shift ;;
    -h|--help) usage; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done
[ -z "$source_dir" ] || [ -z "$commit" ] || die "--source and --commit exclude each other"
[ "$(id -u)" -eq 0 ] || die "must run as root (debootstrap, chroot, mount)"

repo="$(cd "$(dirname "$0")/.." && pwd)"
if [ -n "$source_dir" ]; then
  [ -d "$source_dir" ] || die "--source $source_dir: no such folder"
  source_dir="$(cd "$source_dir" && pwd)"
  git -C "$source_dir" rev-parse --git-dir > /dev/null 2>&1 ||
    die "--source $source_dir: not a git working tree"
  what="working tree $source_dir"
else
  commit="$(git -C "$repo" rev-parse --verify --quiet "${commit:-HEAD}^{commit}")" ||
    die "--commit: no such commit in $repo"
  what="commit $(git -C "$repo" rev-parse --short "$commit")"
fi

log_dir="${log_dir:-/var/tmp/tailsweep-fresh-logs-$(date +%Y%m%d-%H%M%S)}"
mkdir -p "$log_dir"
log_dir="$(cd "$log_dir" && pwd)"

if [ -z "$root" ]; then
  root="$(mktemp -d /var/tmp/tailsweep-fresh-root.XXXXXX)"
else
  mkdir -p "$root"
  root="$(cd "$root" && pwd)"
fi
[ "$root" != / ] || die "--root must not be /"
# A finished debootstrap has etc/debian_version and no debootstrap/ folder.
reuse=no
if [ -f "$root/etc/debian_version" ] && [ ! -d "$root/debootstrap" ]; then
  reuse=yes
elif [ -n "$(ls -A "$root")" ]; then
  die "--root $root is neither empty nor a finished debootstrap"
fi

# --- cleanup: mounts, then the root unless --keep --------------------------
mounts_under_root() {
  awk -v r="$root" '$2 == r || index($2, r "/") == 1 { print $2 }' /proc/mounts | sort -r
}
cleanup() {
  local rc=$? m
  # Steps mount in their own mount namespace, so nothing should be left;
  # unmount whatever is, deepest first, before anything is removed.
  for m in $(mounts_under_root); do umount "$m" 2>/dev/null || umount -l "$m" || true; done
  rm -f "$log_dir/source.tar"
  if [ "$keep" = no ]; then
    if [ -n "$(mounts_under_root)" ]; then
      echo "check-fresh-debian: mounts remain under $root; not removing it" >&2
    else
      rm -rf --one-file-system "$root"
      echo "root $root removed"
    fi
  else
    echo "root kept: $root"
  fi
  echo "logs: $log_dir"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- steps -------------------------------------------------------------------
step_no=0
# step NAME COMMAND...: runs COMMAND with its output in the log, prints one line.
step() {
  local name="$1"; shift
  step_no=$((step_no + 1))
  local log; log="$log_dir/$(printf '%02d' "$step_no")-$name.log"
  local start rc secs
  start=$(date +%s)
  # In a subshell outside any `||`, so that set -e holds inside the step.
  set +e
  ( "$@" ) > "$log" 2>&1
  rc=$?
  set -e
  secs=$(( $(date +%s) - start ))
  if [ "$rc" -eq 0 ]; then
    printf 'step %-18s %6d s  ok\n' "$name" "$secs" | tee -a "$log_dir/summary.txt"
  else
    printf 'step %-18s %6d s  FAILED (exit %d), log: %s\n' "$name" "$secs" "$rc" "$log" |
      tee -a "$log_dir/summary.txt"
    echo "--- last lines of $log:"
    tail -n 40 "$log"
    echo "FAIL: step '$name' failed ($what)"
    exit 1
  fi
}

# Environment of every command in the root: a root login's, plus the proxy
# variables of this machine and Node.js's trust of the extra CA certificates.
root_env=(HOME=/root USER=root LOGNAME=root SHELL=/bin/bash TERM=dumb
          PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin)
for v in http_proxy https_proxy no_proxy HTTP_PROXY HTTPS_PROXY NO_PROXY; do
  if [ -n "${!v:-}" ]; then root_env+=("$v=${!v}"); fi
done
if compgen -G '/usr/local/share/ca-certificates/*.crt' > /dev/null; then
  root_env+=(NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt)
fi

# Run inside the new PID + mount (+ network) namespace: mount, chroot, and
# unmount on exit. $1 root, $2 net (host|isolated), $3 command, $4.. env.
# shellcheck disable=SC2016  # expanded by the inner bash
inner='
set -eu
r=$1 net=$2 cmd=$3; shift 3
cleanup() {
  for m in dev/shm dev/pts dev sys proc; do
    if mountpoint -q "$r/$m"; then umount -R "$r/$m" || umount -R -l "$r/$m"; fi
  done
}
trap cleanup EXIT
if [ "$net" = isolated ]; then ip link set lo up; fi
mount -t proc proc "$r/proc"
mount --rbind /sys "$r/sys"   # with /sys/fs/cgroup (slurmd needs it)
mount --bind /dev "$r/dev"
mount --bind /dev/pts "$r/dev/pts"
mount -t tmpfs -o mode=1777,nosuid,nodev shm "$r/dev/shm"
chroot "$r" /usr/bin/env -i "$@" /bin/bash -ec "$cmd"
'
# in_root NET COMMAND [NICE]: runs the bash COMMAND (set -e) as root in the
# chroot, at nice NICE (default 19) and idle I/O priority.
in_root() {
  local net="$1" cmd="$2" level="${3:-19}"
  local ns=(--mount --pid --fork --kill-child --propagation private)
  if [ "$net" = isolated ] && [ "$share_net" = no ]; then ns+=(--net); else net=host; fi
  nice -n "$level" ionice -c 3 -t \
    unshare "${ns[@]}" bash -c "$inner" inner "$root" "$net" "$cmd" "${root_env[@]}"
}

install_debootstrap() {
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq && apt-get install -y -qq --no-install-recommends debootstrap
}

bootstrap() {
  nice -n 19 ionice -c 3 -t \
    debootstrap --variant=minbase bookworm "$root" http://deb.debian.org/debian
}

# What a standard install has and this machine's network needs.
prepare_root() {
  cat > "$root/etc/apt/sources.list" <<'EOF'
deb http://deb.debian.org/debian bookworm main
deb http://deb.debian.org/debian bookworm-updates main
deb http://deb.debian.org/debian-security bookworm-security main
EOF
  cp --remove-destination /etc/resolv.conf "$root/etc/resolv.conf"
  # As the installer writes it: localhost and this machine's name (munged
  # and Slurm look the name up).
  local name; name="$(hostname)"
  printf '127.0.0.1\tlocalhost\n127.0.1.1\t%s\n::1\t\tlocalhost ip6-localhost ip6-loopback\n' \
    "$name" > "$root/etc/hosts"
  local f
  for f in /etc/apt/apt.conf /etc/apt/apt.conf.d/*; do
    if [ -f "$f" ] && grep -qi proxy "$f"; then
      echo "apt proxy settings: $f"
      cp "$f" "$root$f"
    fi
  done
  mkdir -p "$root/usr/local/share/ca-certificates"
  if compgen -G '/usr/local/share/ca-certificates/*' > /dev/null; then
    cp -r /usr/local/share/ca-certificates/. "$root/usr/local/share/ca-certificates/"
  fi
  in_root host 'export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends ca-certificates
    update-ca-certificates'
}

# The project as a tar: a commit (git archive) or a working tree's tracked
# and untracked-not-ignored files.
make_source_tar() {
  if [ -n "$source_dir" ]; then
    git -C "$source_dir" ls-files -z --cached --others --exclude-standard |
      (cd "$source_dir" && while IFS= read -r -d '' f; do
         if [ -e "$f" ] || [ -L "$f" ]; then printf '%s\0' "$f"; fi
       done) |
      tar -C "$source_dir" --null --no-recursion -T - -cf "$log_dir/source.tar"
  else
    git -C "$repo" archive --format=tar "$commit" > "$log_dir/source.tar"
  fi
}

# Into /root/tailsweep. A reused root keeps its build folder; when the
# sources differ from the last copy, the old ones go and the new ones get
# the current time, so the build folder rebuilds rather than goes stale.
copy_project() {
  local dst="$root/root/tailsweep" stamp="$root/root/.tailsweep-source.sha256" sum
  make_source_tar
  sum="$(sha256sum < "$log_dir/source.tar" | cut -d' ' -f1)"
  if [ -d "$dst" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$sum" ]; then
    echo "same sources as the last copy ($sum): kept"
  else
    local touch=()
    if [ -d "$dst" ]; then
      find "$dst" -mindepth 1 -maxdepth 1 ! -name build -exec rm -rf {} +
      if [ -d "$dst/build" ]; then touch=(-m); fi
    fi
    mkdir -p "$dst"
    tar -C "$dst" "${touch[@]}" -xf "$log_dir/source.tar"
    echo "$sum" > "$stamp"
    echo "copied $what ($sum)"
  fi
  rm -f "$log_dir/source.tar"
}

# --- run -------------------------------------------------------------------
echo "checking $what on a fresh Debian 12 root $root (reused: $reuse)"
echo "logs: $log_dir"
: > "$log_dir/summary.txt"
if ! command -v debootstrap > /dev/null; then step install-debootstrap install_debootstrap; fi
if [ "$reuse" = no ]; then step debootstrap bootstrap; fi
step prepare prepare_root
step copy-project copy_project

cd_repo='cd /root/tailsweep && '
# Command 1.
step install-deps in_root host "$cd_repo ./deploy/install-deps.sh"
step configure in_root host "$cd_repo cmake -S . -B build -G Ninja"
step build-apps in_root host "$cd_repo cmake --build build --target apps"
step smoke in_root isolated "$cd_repo rm -rf runs && ./deploy/run-smoke.sh"
# Command 2.
if [ "$tests" = yes ]; then
  step install-deps-tests in_root host "$cd_repo ./deploy/install-deps.sh --with tests"
  step configure-tests in_root host "$cd_repo cmake -S . -B build -G Ninja"
  step build-all in_root host "$cd_repo cmake --build build"
  step ctest in_root host "$cd_repo ctest --test-dir build --output-on-failure -j2" 12
fi
echo "PASS: $what: command 1$([ "$tests" = yes ] && echo ' and command 2') passed on fresh Debian 12"
