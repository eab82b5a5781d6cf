#!/bin/sh
# Issue 51 item 4: the paper's regime as close as this CPU allows.
# Resumable: rerun this script; each run continues from its newest checkpoint.
k=$1; s=$2
d=/work/runs/paper-regime/$k-s$s
mkdir -p $d
resume=""; [ -d $d/checkpoints ] && ls $d/checkpoints | grep -q step && resume=--resume
exec nice -n 19 ${LAB:-/work/runs/tailsweep-lab} --threads 1 lab train $resume \
  --set operator=sheared_swap marginal=mirrored_pareto norm=post symlog=false \
  kernel=$k seed=$s n_points=1024 layers=6 d_model=64 heads=4 batch=2 \
  steps=4000 lr=1e-3 warmup=500 log_every=20 checkpoint_every=250 \
  eval_instances=16 reference_trials=16 \
  --out-dir $d > $d/train.log 2>&1
