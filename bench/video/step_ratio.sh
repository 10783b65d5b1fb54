#!/usr/bin/env bash
# step_ratio.sh — one training step of a video demo's shape in PixFlow (bench/bench_train_step:
# random inputs, forward + loss + backward + Adam) and in PyTorch 1.13 (the same model trained
# with --iters on batches from the demo clips, already decoded), one after the other on the same
# threads, ROUNDS times interleaved. Prints both and the ratio per round.
#   NET basicvsr (default): configs/demo_video.yaml's step (BasicVSR 16 feats, 2 blocks, 3
#     frames, batch 2, LQ 64, Charbonnier, Adam): bench_train_step --only basicvsr_demo (median
#     of 8 steps after 2 warm-up) against bench/video/torch_basicvsr.py --iters 30 (torch's
#     steady step: the median of its steps 11..30; its first ten warm up).
#   NET basicvsrpp: configs/demo_video_pp.yaml's step (BasicVSR++ 16 channels, 1 block, 3
#     frames, batch 2, LQ 64): bench_train_step --only basicvsrpp_demo (median of 4 after 1
#     warm-up) against bench/video/torch_basicvsrpp.py --iters 4 (median of its steps 2..4:
#     torchvision's CPU deform_conv2d makes a torch step tens of seconds).
#   NET edvr: EDVR x4 32 feats, 5 frames, deformable_groups 8, 2 extraction / 4 reconstruction
#     blocks, TSA, batch 2, LQ 64, Charbonnier, Adam: bench_train_step --only edvr_demo (median
#     of 3 after 1 warm-up) against bench/video/torch_edvr.py --iters 4 (median of its steps
#     2..4; random inputs on both sides, as bench_train_step's).
# usage: bench/video/step_ratio.sh [THREADS] [ROUNDS] [NET]   (build/ must be built;
# data/demo_video fetched; Debian's /usr/bin/python3 with python3-torch, python3-torchvision)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
THREADS="${1:-2}"
ROUNDS="${2:-2}"
NET="${3:-basicvsr}"
case "$NET" in
    basicvsr) CASE=basicvsr_demo; PF_STEPS=8; PF_WARM=2
              TORCH=bench/video/torch_basicvsr.py; T_ITERS=30; T_WARM=10 ;;
    basicvsrpp) CASE=basicvsrpp_demo; PF_STEPS=4; PF_WARM=1
                TORCH=bench/video/torch_basicvsrpp.py; T_ITERS=4; T_WARM=1 ;;
    edvr) CASE=edvr_demo; PF_STEPS=3; PF_WARM=1
          TORCH=bench/video/torch_edvr.py; T_ITERS=4; T_WARM=1 ;;
    *) echo "step_ratio.sh: NET is basicvsr, basicvsrpp or edvr, not '$NET'" >&2; exit 2 ;;
esac
# torch_edvr.py trains on random inputs: no evaluation options
T_OPTS=(--eval-every 1e9 --final-eval 0)
[ "$NET" = edvr ] && T_OPTS=()
export OMP_NUM_THREADS="$THREADS"
for r in $(seq "$ROUNDS"); do
    pf=$(./build/bench/bench_train_step --only "$CASE" --steps "$PF_STEPS" --warmup "$PF_WARM" |
         sed -n 's/.*median \([0-9.]*\) s\/step.*/\1/p')
    tt=$(/usr/bin/python3 "$TORCH" --iters "$T_ITERS" --threads "$THREADS" \
             --steady-from "$T_WARM" ${T_OPTS[@]+"${T_OPTS[@]}"} 2>&1 |
         sed -n 's/^steady: median \([0-9.]*\) s\/step.*/\1/p')
    echo "round $r: pixflow ${pf} s/step (median of $PF_STEPS); torch ${tt} s/step (median of" \
         "steps $((T_WARM + 1))..$T_ITERS); ratio $(awk -v a="$pf" -v b="$tt" \
         'BEGIN { printf "%.2f", b / a }')x"
done
