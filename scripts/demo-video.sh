#!/usr/bin/env bash
# demo-video.sh — PixFlow's video job on a fresh Debian 12 machine, in one command:
#   1. install the build dependencies and build (scripts/setup.sh),
#   2. take real video clips from Debian packages (scripts/fetch-demo-video.sh),
#   3. train BasicVSR x4 on the CPU with every role as its own process (pixflow train
#      configs/demo_video.yaml: cityCC0.mpg frames 0-119 and vtest.avi frames 0-149, about
#      10 minutes on 2 cores), evaluating the held-out cityCC0.mpg frames 130-149 as it goes,
#   4. run the held-out clip through the final checkpoint (pixflow test): mean PSNR-Y/SSIM-Y
#      of the network and of bicubic upscaling, per frame then per clip (docs/video.md).
# Extra arguments go to `pixflow train` (e.g. --resume auto).
# PIXFLOW_DEMO_CONFIG=configs/demo_video_pp.yaml trains the BasicVSR++ variant instead (16
# channels, 1 block per branch, 120 iterations: about the same time on 2 cores).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
CONFIG="${PIXFLOW_DEMO_CONFIG:-configs/demo_video.yaml}"
start=$(date +%s)
bash scripts/setup.sh
bash scripts/fetch-demo-video.sh
echo "demo-video: set-up took $(( $(date +%s) - start )) s; training $CONFIG"
t0=$(date +%s)
./build/pixflow train "$CONFIG" "$@"
echo "demo-video: training took $(( $(date +%s) - t0 )) s"
work_dir=$(sed -n 's/^work_dir: *//p' "$CONFIG" | tr -d "'\"")
latest="$work_dir/checkpoints/$(cat "$work_dir/checkpoints/latest")"
./build/pixflow test "$CONFIG" --checkpoint "$latest"
echo "demo-video: finished in $(( $(date +%s) - start )) s"
