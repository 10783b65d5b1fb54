#!/usr/bin/env bash
# step_ratio.sh — one BasicVSR training step of configs/demo_video.yaml's shape (16 feats,
# 2 blocks, 3 frames, batch 2, LQ 64, Charbonnier, Adam) in PixFlow (bench/bench_train_step
# basicvsr_demo: random inputs, forward + loss + backward + Adam) and in PyTorch 1.13
# (bench/video/torch_basicvsr.py --iters: the same model, batches from the demo clips,
# already decoded), one after the other on the same threads. Prints both and the ratio
# (torch's steady step: the median of its steps 11..30).
# usage: bench/video/step_ratio.sh [THREADS] [ROUNDS]   (build/ must be built; data/demo_video
# fetched; Debian's /usr/bin/python3 with python3-torch)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
THREADS="${1:-2}"
ROUNDS="${2:-2}"
export OMP_NUM_THREADS="$THREADS"
for r in $(seq "$ROUNDS"); do
    pf=$(./build/bench/bench_train_step --only basicvsr_demo --steps 8 --warmup 2 |
         sed -n 's/.*median \([0-9.]*\) s\/step.*/\1/p')
    # torch: 30 steps; its first ten warm up (2.4-2.6 s/step cold where 1.4 s steady was
    # seen), so the median of steps 11..30
    tt=$(/usr/bin/python3 bench/video/torch_basicvsr.py --iters 30 --threads "$THREADS" \
             --eval-every 1e9 2>&1 | sed -n 's/^steady: median \([0-9.]*\) s\/step.*/\1/p')
    echo "round $r: pixflow ${pf} s/step (median of 8); torch ${tt} s/step (median of steps" \
         "11..30); ratio $(awk -v a="$pf" -v b="$tt" 'BEGIN { printf "%.2f", b / a }')x"
done
