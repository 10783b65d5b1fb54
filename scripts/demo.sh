#!/usr/bin/env bash
# demo.sh — PixFlow's main job on a fresh Debian 12 machine, in one command:
#   1. install the build dependencies and build (scripts/setup.sh),
#   2. make the demo photographs from Debian packages (scripts/fetch-demo-data.sh),
#   3. train EDSR x2 with every role as its own process (pixflow train configs/demo.yaml),
#   4. run the held-out photos through the final checkpoint (pixflow test) and print
#      PSNR-Y/SSIM-Y of the network and of bicubic upscaling.
# Extra arguments go to `pixflow train` (e.g. --loaders 3, --resume auto).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
CONFIG="${PIXFLOW_DEMO_CONFIG:-configs/demo.yaml}"
start=$(date +%s)
bash scripts/setup.sh
bash scripts/fetch-demo-data.sh
echo "demo: set-up took $(( $(date +%s) - start )) s; training $CONFIG"
t0=$(date +%s)
./build/pixflow train "$CONFIG" "$@"
echo "demo: training took $(( $(date +%s) - t0 )) s"
work_dir=$(sed -n 's/^work_dir: *//p' "$CONFIG" | tr -d "'\"")
latest="$work_dir/checkpoints/$(cat "$work_dir/checkpoints/latest")"
./build/pixflow test "$CONFIG" --checkpoint "$latest"
echo "demo: finished in $(( $(date +%s) - start )) s"
