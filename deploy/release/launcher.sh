#!/bin/sh
# tailsweep's release launcher (deploy/release.sh copies it to bin/ under
# each program's name). It checks that this system's C and C++ runtimes are
# new enough for the programs in ../libexec, and says so plainly when they
# are not, instead of the loader's "version `GLIBC_2.34' not found"; then
# it runs the program of its own name. Every other library the programs
# load is in ../lib (their RUNPATH): nothing needs LD_LIBRARY_PATH.
need=@GLIBC_FLOOR@
need_cxx=@GLIBCXX_FLOOR@
self=$(readlink -f "$0" 2> /dev/null || echo "$0")
root=$(cd "$(dirname "$self")/.." && pwd)
name=$(basename "$0")
fix="use the container image, or build from source (docs/operations.md, \"Install without root\")"
# 0 when version $1 is at least $2 (dotted numbers).
at_least() {
  [ "$(printf '%s\n%s\n' "$1" "$2" | sort -t. -k1,1n -k2,2n -k3,3n | head -n1)" = "$2" ]
}
arch=$(uname -m)
if [ "$arch" != x86_64 ]; then
  echo "$name: this release is built for x86-64 Linux; this machine is $arch: build from source (README.md)" >&2
  exit 127
fi
have=$(getconf GNU_LIBC_VERSION 2> /dev/null | sed -n 's/^glibc \([0-9.]*\).*/\1/p')
if [ -z "$have" ]; then
  echo "$name: this system's C library is not glibc (musl? Alpine?); it needs glibc $need or newer: $fix" >&2
  exit 127
fi
if ! at_least "$have" "$need"; then
  echo "$name: needs glibc $need, this system has $have: $fix" >&2
  exit 127
fi
# The C++ runtime the loader will find (ldconfig's cache, then the usual
# folders); LD_LIBRARY_PATH may name a newer one (a conda env's).
cxx=""
for dir in $(echo "${LD_LIBRARY_PATH:-}" | tr ':' ' '); do
  [ -f "$dir/libstdc++.so.6" ] && { cxx=$dir/libstdc++.so.6; break; }
done
if [ -z "$cxx" ]; then
  cxx=$( (/sbin/ldconfig -p || ldconfig -p) 2> /dev/null | sed -n 's/.*libstdc++\.so\.6 (libc6,x86-64) => //p' | head -n1)
fi
if [ -z "$cxx" ]; then
  for f in /usr/lib/x86_64-linux-gnu/libstdc++.so.6 /usr/lib64/libstdc++.so.6 /lib64/libstdc++.so.6; do
    [ -f "$f" ] && { cxx=$f; break; }
  done
fi
if [ -z "$cxx" ]; then
  echo "$name: no C++ runtime (libstdc++.so.6) on this system; install it (Debian/Ubuntu: libstdc++6, RHEL: libstdc++), or $fix" >&2
  exit 127
fi
if ! grep -q "GLIBCXX_$need_cxx" "$cxx" 2> /dev/null; then
  echo "$name: needs the C++ runtime of GCC 12 or newer (GLIBCXX_$need_cxx); $cxx is older: $fix" >&2
  exit 127
fi
if [ ! -x "$root/libexec/$name" ]; then
  echo "$name: $root/libexec/$name is missing: unpack the release whole (tailsweep-lab comes in its own archive, unpacked over it)" >&2
  exit 127
fi
exec "$root/libexec/$name" "$@"
