#!/bin/sh
# A tailsweep command-job child in POSIX sh (plus awk; no Python): gradient
# descent on f(w) = w^2 / 2, which follows the whole child contract
# (docs/child-contract.md):
#   - parameters from ${args}-style flags (--lr=0.1 --noise ...) or, without
#     flags, from the JSON object at $TAILSWEEP_PARAMS_FILE;
#   - one metrics line per step appended to $TAILSWEEP_METRICS_FILE;
#   - a checkpoint $TAILSWEEP_CHECKPOINT_DIR/step-N/ every --checkpoint_every
#     steps, made complete by its COMPLETE file, written last;
#   - resumes from step-$TAILSWEEP_RESUME_STEP, so its steps run once;
#   - on SIGTERM: finishes the step, checkpoints it, exits 3 (requeue);
#   - writes $TAILSWEEP_RESULT_FILE at the end, exits 0.
# Run by hand it works too: ./train.sh --lr=0.2 --steps=20 (metrics go to
# stderr, checkpoints to ./checkpoints).
#
# Flags: --lr=X (default 0.1) --seed=N (0) --steps=N (60)
#        --checkpoint_every=N (20) --sleep=SECONDS (0.05, a fractional sleep
#        as GNU coreutils and busybox have) --noise (a boolean: present =
#        true; adds seeded noise to the logged loss, not to the state)

# The worker's SIGTERM (cancel, drain, preemption) only sets a flag, read
# between steps. It may also reach a running sleep or awk (the worker signals
# the process group); that step then does not count.
stop=0
trap 'stop=1' TERM INT

lr=0.1 seed=0 steps=60 checkpoint_every=20 sleep_s=0.05 noise=false

# The JSON file first (flat scalars only: enough for this example), so that
# flags, when given, win.
json_value() {  # KEY -> the scalar's text, quotes stripped; empty if absent
  tr -d '\n' < "$TAILSWEEP_PARAMS_FILE" |
    sed -n "s/.*\"$1\"[[:space:]]*:[[:space:]]*\([^,}]*\).*/\1/p" |
    tr -d '" '
}
if [ $# -eq 0 ] && [ -n "${TAILSWEEP_PARAMS_FILE:-}" ]; then
  for key in lr seed steps checkpoint_every sleep noise; do
    value=$(json_value "$key")
    [ -n "$value" ] || continue
    case $key in
      sleep) sleep_s=$value ;;
      *) eval "$key=\$value" ;;
    esac
  done
fi
for arg in "$@"; do
  case $arg in
    --lr=*) lr=${arg#*=} ;;
    --seed=*) seed=${arg#*=} ;;
    --steps=*) steps=${arg#*=} ;;
    --checkpoint_every=*) checkpoint_every=${arg#*=} ;;
    --sleep=*) sleep_s=${arg#*=} ;;
    --noise) noise=true ;;
    *) echo "train.sh: unknown argument '$arg'" >&2; exit 2 ;;
  esac
done

metrics=${TAILSWEEP_METRICS_FILE:-}
ckdir=${TAILSWEEP_CHECKPOINT_DIR:-./checkpoints}
resume=${TAILSWEEP_RESUME_STEP:-0}
mkdir -p "$ckdir" || exit 1

emit() {  # one whole line: to the metrics file, or stderr by hand
  if [ -n "$metrics" ]; then
    printf '%s\n' "$1" >> "$metrics" || exit 1
  else
    printf '%s\n' "$1" >&2
  fi
}

save() {  # STEP: the state after STEP, as a complete step-STEP/
  dir="$ckdir/step-$1"
  [ -f "$dir/COMPLETE" ] && return 0        # already saved (the restored one)
  tmp="$dir.tmp-$$"
  rm -rf "$tmp" && mkdir "$tmp" || exit 1
  printf '%s %s\n' "$1" "$w" > "$tmp/state" || exit 1
  : > "$tmp/COMPLETE" || exit 1             # the marker, last
  rm -rf "$dir" && mv "$tmp" "$dir" || exit 1  # appears complete at once
}

step=0 w=1
if [ "$resume" -gt 0 ]; then
  state="$ckdir/step-$resume/state"
  if ! read -r step w < "$state"; then
    echo "train.sh: cannot read $state" >&2   # becomes the failure reason
    exit 1
  fi
  echo "train.sh: resuming after step $step (attempt ${TAILSWEEP_ATTEMPT:-1})" >&2
fi

while [ "$step" -lt "$steps" ] && [ "$stop" -eq 0 ]; do
  next=$((step + 1))
  # One gradient step w <- w - lr * w; loss = w^2 / 2, with optional noise
  # seeded by (seed, step) so a resumed run logs the same numbers.
  out=$(awk -v w="$w" -v lr="$lr" -v seed="$seed" -v step="$next" \
            -v noise="$noise" 'BEGIN {
          w = w - lr * w; loss = w * w / 2
          if (noise == "true") { srand(seed * 100003 + step); loss *= 1 + 0.2 * (rand() - 0.5) }
          printf "%.17g %.9g\n", w, loss }')
  status=$?
  [ "$stop" -eq 0 ] || break                 # a stop during the step: undo it
  if [ "$status" -ne 0 ] || [ -z "$out" ]; then
    echo "train.sh: awk failed at step $next (lr '$lr')" >&2
    exit 1
  fi
  # shellcheck disable=SC2086  # "W LOSS": split into $1 and $2 on purpose
  set -- $out
  w=$1 step=$next
  emit "{\"step\":$step,\"loss\":$2,\"w\":$w,\"lr\":$lr}"
  if [ $((step % checkpoint_every)) -eq 0 ] || [ "$step" -eq "$steps" ]; then
    save "$step"
  fi
  [ "$step" -lt "$steps" ] && sleep "$sleep_s"
done

if [ "$step" -lt "$steps" ]; then
  # Stopped: checkpoint the last whole step (none before step 1) and ask to
  # be requeued; the next attempt resumes here.
  [ "$step" -gt 0 ] && save "$step"
  echo "train.sh: stopped after step $step; exit 3 (requeue)" >&2
  exit 3
fi
if [ -n "${TAILSWEEP_RESULT_FILE:-}" ]; then
  printf '{"final_w":%s,"steps":%s}\n' "$w" "$step" > "$TAILSWEEP_RESULT_FILE.tmp" &&
    mv "$TAILSWEEP_RESULT_FILE.tmp" "$TAILSWEEP_RESULT_FILE"
fi
exit 0
