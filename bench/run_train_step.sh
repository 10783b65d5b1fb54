#!/bin/bash
# run_train_step — PixFlow's training step against PyTorch's at the same thread count, and the
# ratio (PixFlow time / PyTorch time; < 1 means PixFlow is faster).
# usage: bench/run_train_step.sh [BUILD_DIR] [THREADS] [STEPS]
#   BUILD_DIR: where bench_train_step was built (default build); THREADS default: all cores.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-build}
threads=${2:-$(nproc)}
steps=${3:-10}
bin="$build/bench/bench_train_step"
[ -x "$bin" ] || bin="$build/bench_train_step"
[ -x "$bin" ] || { echo "run_train_step: no bench_train_step in $build" >&2; exit 1; }
export OMP_NUM_THREADS=$threads
echo "threads $threads, steps $steps, $(date -u +%F), commit $(git -C "$here" rev-parse --short HEAD)"
pf=$("$bin" --steps "$steps")
echo "$pf"
pt=$(/usr/bin/python3 "$here/torch_train_step.py" --threads "$threads" --steps "$steps")
echo "$pt"
for net in demo baseline; do
  a=$(echo "$pf" | awk -v n="$net" '$1 == n { for (i = 1; i <= NF; i++) if ($i == "median") print $(i + 1) }')
  b=$(echo "$pt" | awk -v n="$net" '$1 == n { for (i = 1; i <= NF; i++) if ($i == "median") print $(i + 1) }')
  awk -v n="$net" -v a="$a" -v b="$b" 'BEGIN { printf "%-9s PixFlow %.4f s, PyTorch %.4f s, ratio %.2f\n", n, a, b, a / b }'
done
