#!/usr/bin/env bash
# deploy/gpu/pack.sh [BUILD_DIR] [PACK_DIR]: the folder a GPU node without
# our Debian packages needs beside the source tree (bench/gpu/device_check.sh
# uses it; docs/operations.md, "GPU nodes"):
#
#   PACK_DIR/deps.tar.gz      the torch-only build's dependencies, copied from
#                             this machine's Debian packages (abseil, CLI11,
#                             nlohmann-json, yaml-cpp, GoogleTest): usr/...
#   PACK_DIR/services.tar.gz  the release of BUILD_DIR's services
#                             (deploy/release.sh): tailsweep-VERSION/bin/...
#                             run as they are, their libraries found by
#                             RUNPATH
#
# Unpack both under a folder of your own (never /usr) and point
# CMAKE_PREFIX_PATH at DIR/usr and LD_LIBRARY_PATH at
# DIR/usr/lib/x86_64-linux-gnu (for what you build).
# Defaults: BUILD_DIR=build, PACK_DIR=.gpu-pack (git-ignored). Prints sizes.
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$src/build}
pack=${2:-$src/.gpu-pack}
deps_packages=(libabsl-dev libabsl20220623 libcli11-dev nlohmann-json3-dev
  libyaml-cpp-dev libyaml-cpp0.7 libgtest-dev libgmock-dev googletest)
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$pack"

# Services: the release (its own checks: no service links LibTorch).
"$src/deploy/release.sh" --build "$build" --dist "$stage/release" > /dev/null
cp "$stage"/release/tailsweep-*-linux-x86_64.tar.gz "$pack/services.tar.gz"
mkdir -p "$stage/services"
tar -C "$stage/services" -xzf "$pack/services.tar.gz"

# Dependencies: the installed files of each package, paths kept.
mkdir -p "$stage/deps"
for p in "${deps_packages[@]}"; do
  if ! dpkg -s "$p" > /dev/null 2>&1; then
    echo "pack.sh: Debian package $p is not installed (./deploy/install-deps.sh --with tests)" >&2
    exit 2
  fi
  dpkg -L "$p" | while read -r f; do
    case "$f" in /usr/share/doc/* | /usr/share/man/* | /usr/share/lintian/*) continue ;; esac
    if [ -f "$f" ] || [ -L "$f" ]; then
      mkdir -p "$stage/deps$(dirname "$f")"
      cp -a "$f" "$stage/deps$f"
    fi
  done
done
tar -C "$stage/deps" -czf "$pack/deps.tar.gz" usr

raw() { du -sb "$1" | cut -f1; }
mb() { awk -v b="$1" 'BEGIN {printf "%.1f", b / 1e6}'; }
echo "pack: $pack"
echo "  deps.tar.gz     $(mb "$(stat -c %s "$pack/deps.tar.gz")") MB" \
  "(raw $(mb "$(raw "$stage/deps")") MB)"
echo "  services.tar.gz $(mb "$(stat -c %s "$pack/services.tar.gz")") MB" \
  "(raw $(mb "$(raw "$stage/services")") MB)"
# What a device call carries: the pack and the tree git would copy.
if ! git -C "$src" rev-parse --git-dir > /dev/null 2>&1; then
  echo "  (not a git checkout: the source tree's share of a device call is not counted)"
  exit 0
fi
tree_bytes=$(cd "$src" && git ls-files -z --cached --others --exclude-standard |
  xargs -0 stat -c %s 2> /dev/null | awk '{s += $1} END {print s + 0}')
total=$(( $(raw "$pack") + tree_bytes ))
echo "  with the source tree ($(mb "$tree_bytes") MB): $(mb "$total") MB of" \
  "the 64 MiB a device call carries"
if [ "$total" -gt $((60 * 1024 * 1024)) ]; then
  echo "pack.sh: too large to carry with the source tree" >&2
  exit 1
fi
