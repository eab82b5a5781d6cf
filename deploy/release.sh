#!/usr/bin/env bash
# deploy/release.sh [--lab] [--build DIR] [--dist DIR]: the release a user
# without root unpacks and runs, with no compiler and no apt
# (docs/operations.md, "Install without root"):
#
#   DIST/tailsweep-VERSION-linux-x86_64.tar.gz       the services
#     tailsweep-VERSION/bin/        tailsweep, tailsweep-coordinator,
#                                   tailsweep-worker, tailsweep-snapshot:
#                                   launchers that check glibc first
#     tailsweep-VERSION/libexec/    the programs (RUNPATH $ORIGIN/../lib)
#     tailsweep-VERSION/lib/        every shared library they load but the C
#                                   and C++ runtimes (libc, libm, the loader,
#                                   libstdc++, libgcc_s): Debian 12's
#                                   libstdc++ itself needs glibc 2.36, which
#                                   would shut out RHEL 9 and Ubuntu 22.04
#     tailsweep-VERSION/python/     the Python package (PYTHONPATH, or the
#                                   wheel below)
#     tailsweep-VERSION/share/      README, docs, sweeps, and FLOOR: the
#                                   newest GLIBC_x.y and GLIBCXX_x.y.z
#                                   symbols any of them needs (objdump -T),
#                                   which the launchers check
#   DIST/tailsweep-VERSION-py3-none-manylinux_X_Y_x86_64.whl    the same
#     programs and the Python package as a wheel (release/make_wheel.py):
#     `pip install` puts the programs on the environment's PATH
#   DIST/tailsweep-lab-VERSION-linux-x86_64.tar.gz    with --lab: the
#     tailsweep-lab program (the train and tails kinds) and its LibTorch
#     (Debian's, CPU only), unpacked over the first; a GPU node builds its
#     own against a CUDA LibTorch instead (docs/operations.md, "GPU nodes").
#
# From BUILD/bin (default build/; `cmake --build build --target apps`).
# Needs patchelf and binutils (./deploy/install-deps.sh --with release).
# Prints the sizes and the glibc floor; fails when a service links LibTorch.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=$src/build
dist=$src/dist
lab=no
while [ $# -gt 0 ]; do
  case "$1" in
    --lab) lab=yes; shift ;;
    --build) build=${2:?--build needs a folder}; shift 2 ;;
    --dist) dist=${2:?--dist needs a folder}; shift 2 ;;
    -h | --help) sed -n '2,31p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "release.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
services=(tailsweep tailsweep-coordinator tailsweep-worker tailsweep-snapshot)
for tool in patchelf objdump; do
  command -v "$tool" > /dev/null || {
    echo "release.sh: $tool is missing (./deploy/install-deps.sh --with release)" >&2
    exit 2
  }
done
programs=("${services[@]}")
[ "$lab" = yes ] && programs+=(tailsweep-lab)
for exe in "${programs[@]}"; do
  [ -x "$build/bin/$exe" ] || {
    echo "release.sh: $build/bin/$exe missing: build it first" \
      "(cmake --build $build --target apps)" >&2
    exit 2
  }
done
full_version=$("$build/bin/tailsweep" --version | awk '{print $2}')
version=${full_version%%+*}
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$dist"

# The C and C++ runtimes every glibc system has (the launcher checks that
# they are new enough).
is_c_runtime() {
  case "$(basename "$1")" in
    libc.so.* | libm.so.* | libpthread.so.* | libdl.so.* | librt.so.* | \
      libresolv.so.* | libutil.so.* | ld-linux* | libstdc++.so.* | \
      libgcc_s.so.*) return 0 ;;
  esac
  return 1
}

# Copies `exe` into ROOT/libexec and its libraries into ROOT/lib, with
# RUNPATHs that find them there: $ORIGIN/../lib for the program, $ORIGIN
# for each library (a RUNPATH serves only its own object's needs).
bundle() {
  local root=$1 exe=$2
  mkdir -p "$root/libexec" "$root/lib"
  cp "$build/bin/$exe" "$root/libexec/$exe"
  chmod u+w "$root/libexec/$exe"
  patchelf --set-rpath '$ORIGIN/../lib' "$root/libexec/$exe"
  ldd "$build/bin/$exe" | awk '/=> \// {print $3}' | while read -r lib; do
    is_c_runtime "$lib" && continue
    local name
    name=$(basename "$lib")
    [ -e "$root/lib/$name" ] && continue
    cp -L "$lib" "$root/lib/$name"
    chmod u+w "$root/lib/$name"
    patchelf --set-rpath '$ORIGIN' "$root/lib/$name"
  done
}

# The newest version of symbol set PREFIX (GLIBC_, GLIBCXX_) that any
# file under `dir` needs.
floor_of() {
  find "$1" -type f \( -name '*.so*' -o -perm -u+x \) -print0 |
    xargs -0 objdump -T 2> /dev/null |
    grep -o "(${2}[0-9][0-9.]*)" | tr -d '()' | sed "s/^$2//" |
    sort -t. -k1,1n -k2,2n -k3,3n -u | tail -n1
}

# The services.
top=tailsweep-$version
root=$stage/$top
for exe in "${services[@]}"; do
  if ldd "$build/bin/$exe" | grep -q libtorch; then
    echo "release.sh: $exe links LibTorch; only tailsweep-lab may" >&2
    exit 1
  fi
  bundle "$root" "$exe"
done
floor=$(floor_of "$root" GLIBC_)
cxx_floor=$(floor_of "$root" GLIBCXX_)
mkdir -p "$root/bin" "$root/share/tailsweep" "$root/python"
for exe in "${services[@]}" tailsweep-lab; do
  sed "s/@GLIBC_FLOOR@/$floor/; s/@GLIBCXX_FLOOR@/$cxx_floor/" \
    "$src/deploy/release/launcher.sh" > "$root/bin/$exe"
  chmod 755 "$root/bin/$exe"
done
cp -r "$src/python/tailsweep" "$root/python/"
find "$root/python" -name __pycache__ -prune -exec rm -rf {} +
cp "$src/LICENSE" "$root/"
cp "$src/README.md" "$root/share/tailsweep/"
cp -r "$src/docs" "$src/sweeps" "$root/share/tailsweep/"
printf 'glibc %s\nlibstdc++ GLIBCXX_%s\n' "$floor" "$cxx_floor" \
  > "$root/share/tailsweep/FLOOR"
echo "$full_version" > "$root/share/tailsweep/VERSION"
services_tar=$dist/tailsweep-$version-linux-x86_64.tar.gz
tar -C "$stage" --owner=0 --group=0 -czf "$services_tar" "$top"

mb() { awk -v b="$1" 'BEGIN {printf "%.1f", b / 1e6}'; }
wheel=$(python3 "$src/deploy/release/make_wheel.py" "$services_tar" "$dist")
echo "release $full_version (needs glibc $floor and GLIBCXX_$cxx_floor or newer)"
echo "  $services_tar $(mb "$(stat -c %s "$services_tar")") MB" \
  "(unpacked $(mb "$(du -sb "$root" | cut -f1)") MB)"
echo "  $wheel $(mb "$(stat -c %s "$wheel")") MB"

# The lab program and its LibTorch, as a second archive over the first.
if [ "$lab" = yes ]; then
  lab_root=$stage/lab/$top
  bundle "$lab_root" tailsweep-lab
  # What the services' archive already has stays out of this one.
  for f in "$lab_root"/lib/*; do
    [ -e "$root/lib/$(basename "$f")" ] && rm "$f"
  done
  # Its own launcher, over the services' one: its floor may be higher
  # (Debian's LibTorch and OpenBLAS need glibc 2.36).
  lab_floor=$(floor_of "$lab_root" GLIBC_)
  lab_cxx_floor=$(floor_of "$lab_root" GLIBCXX_)
  mkdir -p "$lab_root/bin"
  sed "s/@GLIBC_FLOOR@/$lab_floor/; s/@GLIBCXX_FLOOR@/$lab_cxx_floor/" \
    "$src/deploy/release/launcher.sh" > "$lab_root/bin/tailsweep-lab"
  chmod 755 "$lab_root/bin/tailsweep-lab"
  lab_tar=$dist/tailsweep-lab-$version-linux-x86_64.tar.gz
  tar -C "$stage/lab" --owner=0 --group=0 -czf "$lab_tar" "$top"
  echo "  $lab_tar $(mb "$(stat -c %s "$lab_tar")") MB" \
    "(unpacked $(mb "$(du -sb "$lab_root" | cut -f1)") MB; needs glibc" \
    "$lab_floor and GLIBCXX_$lab_cxx_floor)"
fi
