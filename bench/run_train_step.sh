#!/bin/bash
# run_train_step — the old entry point, now bench/train_step with one round of the demo and
# EDSR-baseline training steps (see that script; speed-up = PyTorch time / PixFlow time).
# usage: bench/run_train_step.sh [BUILD_DIR] [THREADS] [STEPS]
here=$(cd "$(dirname "$0")" && pwd)
CASES=${CASES:-demo edsr_baseline} exec "$here/train_step" "${1:-build}" "${2:-$(nproc)}" 1 "${3:-10}"
