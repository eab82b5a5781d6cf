#!/usr/bin/env bash
# Installs every Debian 12 package that tailsweep's build, tests, benchmarks
# and main job need. Idempotent and quiet: it installs only what is missing and
# prints one line per step. Needs root (or sudo) on first run.
#   deploy/install-deps.sh [--with slurm]
# --with slurm adds a single-node Slurm (slurmctld, slurmd, munge, the client
# commands), which the Slurm tests configure and start themselves.
set -euo pipefail

with=()
while [ $# -gt 0 ]; do
  case "$1" in
    --with) with+=("${2:?--with needs a group: slurm}"); shift 2 ;;
    --with=*) with+=("${1#--with=}"); shift ;;
    -h|--help) sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "install-deps: unknown argument '$1' (allowed: --with slurm)" >&2; exit 2 ;;
  esac
done

packages=(
  build-essential cmake ninja-build ccache pkg-config clang-format
  libtorch-dev libopenblas0-pthread
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libsqlite3-dev sqlite3 libspdlog-dev libabsl-dev libssl-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libyaml-cpp-dev libcli11-dev nlohmann-json3-dev
  libcpp-httplib-dev prometheus-cpp-dev prometheus chromium nodejs
  openssl procps python3-pandas curl systemd
)
for group in "${with[@]}"; do
  case "$group" in
    slurm) packages+=(slurmctld slurmd slurm-client munge) ;;
    *) echo "install-deps: unknown group '$group' (allowed: slurm)" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
else
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  echo "install-deps: installing ${#missing[@]} packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq >/dev/null
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  echo "install-deps: done"
fi

# The npm packages of web/ (package-lock.json): uPlot, compiled into the
# report pages, and playwright-core, which drives chromium in the browser
# tests. Reinstalled when the lock file is newer than what is installed.
web="$(cd "$(dirname "$0")/.." && pwd)/web"
if ! command -v npm >/dev/null; then
  echo "install-deps: npm is missing (Debian: apt-get install npm)" >&2
  exit 1
fi
if [ ! -f "$web/node_modules/.package-lock.json" ] ||
   [ "$web/package-lock.json" -nt "$web/node_modules/.package-lock.json" ]; then
  echo "install-deps: npm packages of web/"
  (cd "$web" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
else
  echo "install-deps: npm packages of web/ present"
fi
