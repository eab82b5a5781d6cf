#!/usr/bin/env bash
# Installs the Debian 12 packages (and, for the tests, web/'s npm packages)
# that tailsweep needs. Idempotent and quiet: it installs only what is
# missing and prints one line per step. Needs root (or sudo) on first run.
#   deploy/install-deps.sh [--with tests|slurm|bench|release]...
# Alone: what the build of the executables and the main job need (the
# README's first command). --with tests adds what only the test suite uses:
# GoogleTest, chromium and Node.js with npm and playwright-core (browser
# tests), the prometheus server, pandas, systemd-analyze, curl, clang-format,
# haproxy (the front proxy's test), patchelf and python3-venv (the release
# and its wheel are tested), git (the version test makes a scratch
# checkout; the README's second command), mypy (the Python package is
# checked with --strict).
# --with slurm adds a single-node Slurm (slurmctld, slurmd, munge, the client
# commands), which the Slurm tests configure and start themselves. --with
# bench adds what benchmarks and examples compare with or run on: pandas,
# Optuna, PyTorch (bench/python_client_bench.py, examples/pytorch).
# --with release adds what deploy/release.sh, deploy/check-release.sh and
# deploy/image.sh use: patchelf, binutils, debootstrap, Python's venv and
# pip (to try the wheel).
set -euo pipefail

with=()
while [ $# -gt 0 ]; do
  case "$1" in
    --with) with+=("${2:?--with needs a group: tests, slurm, bench or release}"); shift 2 ;;
    --with=*) with+=("${1#--with=}"); shift ;;
    -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "install-deps: unknown argument '$1' (allowed: --with tests, --with slurm, --with bench, --with release)" >&2; exit 2 ;;
  esac
done

# The build and the main job; openssl and sqlite3 are the product's too
# (`tailsweep slurm up` makes its TLS keys; the database is plain SQLite).
packages=(
  build-essential cmake ninja-build ccache pkg-config
  libtorch-dev libopenblas0-pthread
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  zlib1g-dev
  libsqlite3-dev sqlite3 libspdlog-dev libabsl-dev libssl-dev openssl
  libyaml-cpp-dev libcli11-dev nlohmann-json3-dev
  libcpp-httplib-dev prometheus-cpp-dev procps
)
tests=no
for group in "${with[@]}"; do
  case "$group" in
    tests)
      tests=yes
      packages+=(libgtest-dev libgmock-dev clang-format chromium prometheus
                 python3-pandas python3-pytest python3-optuna curl systemd
                 haproxy nodejs patchelf python3-venv git mypy)
      # Debian's nodejs comes without npm (its own package); a nodejs from
      # another archive (NodeSource) carries npm and conflicts with Debian's.
      if ! command -v npm > /dev/null; then packages+=(npm); fi ;;
    slurm) packages+=(slurmctld slurmd slurm-client munge) ;;
    bench) packages+=(python3-pandas python3-optuna python3-torch) ;;
    release) packages+=(patchelf binutils debootstrap python3-venv
                        python3-pip) ;;
    *) echo "install-deps: unknown group '$group' (allowed: tests, slurm, bench, release)" >&2; exit 2 ;;
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

# The browser tests' npm packages (web/package-lock.json: playwright-core,
# which drives chromium). The build needs none: uPlot is vendored
# (web/vendor/). Reinstalled when the lock file is newer than what is there.
if [ "$tests" = yes ]; then
  web="$(cd "$(dirname "$0")/.." && pwd)/web"
  if [ ! -f "$web/node_modules/.package-lock.json" ] ||
     [ "$web/package-lock.json" -nt "$web/node_modules/.package-lock.json" ]; then
    echo "install-deps: npm packages of web/"
    (cd "$web" && npm ci --no-audit --no-fund --loglevel=error > /dev/null)
  else
    echo "install-deps: npm packages of web/ present"
  fi
fi
