#!/bin/bash
# run_train_step — the old entry point, now bench/train_step with one round of the demo and
# EDSR-baseline training steps (see that script; speed-up = PyTorch time / PixFlow time).
# usage: bench/run_train_step.sh [--smoke] [BUILD_DIR] [THREADS] [STEPS]
#   --smoke: train_step --smoke with these two cases (tiny sizes, nothing timed; ctest
#   bench_smoke.run_train_step)
here=$(cd "$(dirname "$0")" && pwd)
if [ "${1:-}" = --smoke ]; then
  shift
  CASES=${CASES:-demo edsr_baseline} exec "$here/train_step" --smoke "${1:-build}" 1
fi
CASES=${CASES:-demo edsr_baseline} exec "$here/train_step" "${1:-build}" "${2:-$(nproc)}" 1 "${3:-10}"
