#!/usr/bin/env bash
# tests/deploy/release_test.sh SOURCE_DIR BUILD_DIR: the release
# (deploy/release.sh) runs from any folder with nothing set by hand.
# - Unpacked under a fresh folder, every library its programs load but the
#   C and C++ runtimes comes from its own lib/ (RUNPATH), with an empty
#   environment (no LD_LIBRARY_PATH), and `tailsweep --version` runs.
# - A launcher whose floor this system does not meet says so, exit 127.
# - The wheel installs offline into a fresh virtualenv and puts the programs
#   on its PATH; `import tailsweep` works there.
# - A command sweep runs through the unpacked coordinator and worker
#   (`--devices auto` here: no nvidia-smi, so cpu, saying why).
set -euo pipefail
src=${1:?source dir}
build=${2:?build dir}
work=$(mktemp -d "${TMPDIR:-/tmp}/tailsweep_release_XXXXXX")
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2> /dev/null || true; done
  wait 2> /dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$src/deploy/release.sh" --build "$build" --dist "$work/dist" | tee "$work/release.out"
tarball=$(echo "$work"/dist/tailsweep-*-linux-x86_64.tar.gz)
wheel=$(echo "$work"/dist/tailsweep-*-py3-none-manylinux_*_x86_64.whl)
[ -f "$tarball" ] || fail "no release archive"
[ -f "$wheel" ] || fail "no wheel"

# Unpacked somewhere no build path leads to.
mkdir -p "$work/elsewhere"
tar -C "$work/elsewhere" -xzf "$tarball"
top=$(echo "$work"/elsewhere/tailsweep-*)
for exe in tailsweep tailsweep-coordinator tailsweep-worker tailsweep-snapshot; do
  [ -x "$top/bin/$exe" ] || fail "bin/$exe missing"
  # Every library resolves, and all but the runtimes from the release.
  env -i ldd "$top/libexec/$exe" > "$work/ldd.txt"
  if grep -q "not found" "$work/ldd.txt"; then
    cat "$work/ldd.txt"; fail "$exe: a library is not found"
  fi
  outside=$(awk '/=> \// {print $3}' "$work/ldd.txt" | xargs -r readlink -f |
    grep -v "^$top/lib/" |
    grep -v -E '/(libc|libm|libstdc\+\+|libgcc_s|libpthread|libdl|librt|libresolv)\.so' || true)
  [ -z "$outside" ] || fail "$exe loads from outside the release: $outside"
  if ldd "$top/libexec/$exe" | grep -q libtorch; then fail "$exe links LibTorch"; fi
done
version=$(env -i "$top/bin/tailsweep" --version)
echo "$version" | grep -q '^tailsweep ' || fail "tailsweep --version said '$version'"
grep -q '^glibc 2\.' "$top/share/tailsweep/FLOOR" || fail "no glibc floor"
[ -f "$top/LICENSE" ] || fail "no LICENSE"

# A floor above this system's: a plain message, never a loader error.
sed 's/^need=.*/need=9.99/' "$top/bin/tailsweep" > "$top/bin/old-floor"
chmod +x "$top/bin/old-floor"
cp "$top/libexec/tailsweep" "$top/libexec/old-floor"
if "$top/bin/old-floor" --version 2> "$work/floor.err"; then fail "ran below its floor"; fi
grep -q "needs glibc 9.99, this system has" "$work/floor.err" ||
  fail "floor message: $(cat "$work/floor.err")"
sed 's/^need_cxx=.*/need_cxx=9.9.99/' "$top/bin/tailsweep" > "$top/bin/old-floor"
if "$top/bin/old-floor" --version 2> "$work/floor.err"; then fail "ran below its C++ floor"; fi
grep -q "GLIBCXX_9.9.99" "$work/floor.err" || fail "C++ floor message: $(cat "$work/floor.err")"
if "$top/bin/tailsweep-lab" 2> "$work/lab.err"; then fail "tailsweep-lab ran without its archive"; fi
grep -q "own archive" "$work/lab.err" || fail "lab message: $(cat "$work/lab.err")"

# The wheel, offline, in a fresh virtualenv.
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install --no-index --no-cache-dir --quiet "$wheel"
for exe in tailsweep tailsweep-coordinator tailsweep-worker tailsweep-snapshot; do
  [ -x "$work/venv/bin/$exe" ] || fail "the wheel put no $exe on the venv's PATH"
done
[ "$("$work/venv/bin/tailsweep" --version)" = "$version" ] || fail "the wheel's tailsweep differs"
"$work/venv/bin/python" -c 'import tailsweep; tailsweep.Client' || fail "import tailsweep"

# A command sweep through the unpacked services, read by the Python client.
run=$work/run
mkdir -p "$run"
cd "$run"
port=$((52000 + RANDOM % 4000))
env -i PATH=/usr/bin:/bin "$top/bin/tailsweep-coordinator" --db db --data-dir data \
  --listen 127.0.0.1:$port --http-listen 127.0.0.1:$((port + 1)) 2> coordinator.log &
pids+=($!)
env -i PATH=/usr/bin:/bin "$top/bin/tailsweep-worker" --coordinator 127.0.0.1:$port \
  --devices auto --work-dir work 2> worker.log &
pids+=($!)
cat > job.sh << 'JOB'
#!/bin/sh
echo '{"step": 1, "loss": 2}' >> "$TAILSWEEP_METRICS_FILE"
JOB
chmod +x job.sh
printf 'name: rel\nkind: command\ncommand: [./job.sh]\ngrid:\n  x: [1, 2]\n' > spec.yaml
# Submitted once the coordinator says it serves (its log line), not after
# a guessed wait.
until grep -q "serving on" coordinator.log; do
  kill -0 "${pids[0]}" 2> /dev/null || fail "the coordinator exited: $(cat coordinator.log)"
  sleep 0.05
done
"$top/bin/tailsweep" submit spec.yaml --coordinator 127.0.0.1:$port > submit.log 2>&1 ||
  fail "submit: $(cat submit.log)"
PYTHONPATH=$top/python python3 - $((port + 1)) << 'PY' || fail "the sweep did not finish: $(cat worker.log)"
import sys, tailsweep
s = tailsweep.Client("http://127.0.0.1:%s" % sys.argv[1]).sweep("rel")
s.wait(poll=0.2, timeout=600)
rows = s.results(output="records")
assert len(rows) == 2, rows
PY
grep -q -- "--devices auto: " worker.log ||
  fail "the worker did not say why it chose cpu: $(cat worker.log)"
echo "release test passed"
