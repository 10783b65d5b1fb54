#!/usr/bin/env bash
# bench/gan/run.sh — Real-ESRGAN's training iteration (issue 41): PixFlow's pf_gan_compute
# (bench_gan_step: net_g forward, the generator step through VGG19 and net_d, the discriminator
# step on real and fake) against the same computation in PyTorch (torch_step.py, BasicSR's
# RealESRGANModel.optimize_parameters without the optimiser steps), on the same case
# (net_g MSRResNet SCALE / FEAT / BLOCKS, default the image demo's x2 32 / 4 as the issue asks;
# UNetDiscriminatorSN 64, VGG19 to conv5_4, batch 4, GT 128) with the same threads, ROUNDS alternating runs of STEPS steps after one warm-up step each. Prints
# every run and "pixflow/torch: X.XXx (goal >= 1.5x)": PyTorch's median step time over
# PixFlow's, the median of the rounds' ratios; writes it all to
# bench/results/gan_<host>_<date>.txt.
#   bench/gan/run.sh BUILD [STEPS=3] [ROUNDS=2] [THREADS=2] [SCALE=2 FEAT=32 BLOCKS=4]
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
PY=/usr/bin/python3
BUILD=$1 STEPS=${2:-3} ROUNDS=${3:-2} THREADS=${4:-2} SCALE=${5:-2} FEAT=${6:-32} BLOCKS=${7:-4}
"$PY" -c 'import torch, torchvision' 2>/dev/null || {
    echo "bench gan: no torch/torchvision for $PY"; exit 77; }
export OMP_NUM_THREADS=$THREADS OMP_WAIT_POLICY=passive
CPU=$(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1)
OUT="$ROOT/bench/results/gan_$(hostname)_$(date -u +%Y-%m-%d).txt"
{
    echo "# bench/gan/run.sh $BUILD $STEPS $ROUNDS $THREADS $SCALE $FEAT $BLOCKS: $(date -u +%FT%TZ), $CPU," \
         "$(nproc) cores, git $(git -C "$ROOT" rev-parse --short HEAD)"
    ratios=()
    for r in $(seq "$ROUNDS"); do
        p=$("$BUILD/bench/gan/bench_gan_step" --steps "$STEPS" --warmup 1 \
            --net-g "$SCALE" "$FEAT" "$BLOCKS" | tee /dev/stderr |
            sed -n 's/^pf_gan_compute: median \([0-9.]*\) s.*/\1/p')
        t=$("$PY" "$HERE/torch_step.py" "$THREADS" 4 128 1 "$STEPS" "$SCALE" "$FEAT" "$BLOCKS" | tee /dev/stderr |
            sed -n 's/^torch: median \([0-9.]*\) s.*/\1/p')
        ratio=$(awk -v p="$p" -v t="$t" 'BEGIN { printf "%.2f", t / p }')
        echo "round $r: pixflow $p s, torch $t s per step: ${ratio}x"
        ratios+=("$ratio")
    done
    med=$(printf '%s\n' "${ratios[@]}" | sort -n | awk '{ a[NR] = $1 } END {
        print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }')
    echo "pixflow/torch: ${med}x (goal >= 1.5x; median of $ROUNDS rounds, $THREADS threads)"
} 2>&1 | tee "$OUT"
