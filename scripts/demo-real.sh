#!/usr/bin/env bash
# demo-real.sh — real-world SR on a fresh Debian 12 machine, in one command:
#   1. set-up and demo photos as scripts/demo.sh (setup.sh, fetch-demo-data.sh),
#   2. train MSRResNet x2 on LQ made in the loaders by Real-ESRGAN's second-order degradation
#      (configs/demo_real.yaml, 4 to 8 minutes on 2 cores),
#   3. freeze the degraded validation set (pixflow data --degrade: the LQ that evaluation used),
#   4. test the model on it (PSNR-Y/SSIM-Y of the network and of bicubic upscaling), and the
#      image demo's bicubic-trained EDSR x2 (work_dirs/demo; trained first if it is not there)
#      on the same degraded images (configs/demo_on_real.yaml).
# Extra arguments go to `pixflow train` (e.g. --loaders 3, --resume auto).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
start=$(date +%s)
bash scripts/setup.sh
bash scripts/fetch-demo-data.sh
latest() { echo "$1/checkpoints/$(cat "$1/checkpoints/latest")"; }
if [ ! -s work_dirs/demo/checkpoints/latest ]; then
    echo "demo-real: no image demo model in work_dirs/demo: training configs/demo.yaml first"
    ./build/pixflow train configs/demo.yaml
fi
t0=$(date +%s)
./build/pixflow train configs/demo_real.yaml "$@"
echo "demo-real: training took $(( $(date +%s) - t0 )) s"
./build/pixflow data configs/demo_real.yaml --degrade --set test -o work_dirs/demo_real/val_lq --force
echo "demo-real: the degradation-trained MSRResNet x2 on the degraded validation photos:"
./build/pixflow test configs/demo_real.yaml --checkpoint "$(latest work_dirs/demo_real)"
echo "demo-real: the image demo's bicubic-trained EDSR x2 on the same degraded photos:"
./build/pixflow test configs/demo_on_real.yaml --checkpoint "$(latest work_dirs/demo)"
echo "demo-real: finished in $(( $(date +%s) - start )) s"
