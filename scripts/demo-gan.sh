#!/usr/bin/env bash
# demo-gan.sh — a GAN fine-tune on the CPU after the real-world demo, in one command:
#   1. set-up and demo photos as scripts/demo.sh; the real-world demo's model (scripts/demo-real.sh,
#      work_dirs/demo_real: MSRResNet x2 trained with L1 on Real-ESRGAN's degradations) is trained
#      first when it is not there,
#   2. fine-tune it as Real-ESRGAN's RealESRGANModel against UNetDiscriminatorSN
#      (configs/demo_gan.yaml: 200 iterations, batch 4, GT 96; 10 to 11 minutes on 2 shared cores), with
#      L1 + VGG19 perceptual + GAN losses when VGG19 weights are there, else L1 + GAN only,
#   3. test the fine-tuned model and the demo_real model on the same degraded validation photos
#      (PSNR-Y/SSIM-Y; a GAN's are expected lower: it trades fidelity for texture).
# VGG19 weights are never downloaded: VGG19_WEIGHTS=path (default
# experiments/pretrained_models/vgg19.safetensors), made from torchvision's vgg19-dcbb9e9d.pth by
#   python3 scripts/pth2safetensors.py vgg19-dcbb9e9d.pth experiments/pretrained_models/vgg19.safetensors
# The config actually trained is written to work_dirs/demo_gan.yaml. Extra arguments go to
# `pixflow train` (e.g. --loaders 3).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
start=$(date +%s)
latest() { echo "$1/checkpoints/$(cat "$1/checkpoints/latest")"; }
if [ -s work_dirs/demo_real/checkpoints/latest ]; then
    bash scripts/setup.sh
    bash scripts/fetch-demo-data.sh
else    # demo-real.sh sets up and fetches the photos itself
    echo "demo-gan: no real-world demo model in work_dirs/demo_real: running scripts/demo-real.sh first"
    bash scripts/demo-real.sh
fi
vgg="${VGG19_WEIGHTS:-experiments/pretrained_models/vgg19.safetensors}"
cfg=work_dirs/demo_gan.yaml
mkdir -p work_dirs
# load_from: demo_real's latest checkpoint; perceptual_opt is the last block of the config
sed "s|^load_from: .*|load_from: $(latest work_dirs/demo_real)|" configs/demo_gan.yaml > "$cfg.tmp"
if [ -f "$vgg" ]; then
    echo "demo-gan: VGG19 weights $vgg: L1 + perceptual (VGG19) + GAN losses"
    sed "s|^    vgg_weights: .*|    vgg_weights: $vgg|" "$cfg.tmp" > "$cfg"
else
    echo "demo-gan: NOTE: no VGG19 weights at $vgg: training WITHOUT the perceptual loss (L1 + GAN"
    echo "demo-gan: only). For Real-ESRGAN's losses, convert torchvision's vgg19-dcbb9e9d.pth:"
    echo "demo-gan:   python3 scripts/pth2safetensors.py vgg19-dcbb9e9d.pth $vgg"
    echo "demo-gan: and run again (or set VGG19_WEIGHTS=path)."
    sed '/^  perceptual_opt:/,$d' "$cfg.tmp" > "$cfg"
fi
rm -f "$cfg.tmp"
t0=$(date +%s)
./build/pixflow train "$cfg" "$@"
echo "demo-gan: GAN fine-tune took $(( $(date +%s) - t0 )) s"
if [ ! -d work_dirs/demo_real/val_lq ]; then
    ./build/pixflow data configs/demo_real.yaml --degrade --set test -o work_dirs/demo_real/val_lq --force
fi
echo "demo-gan: the GAN fine-tuned MSRResNet x2 on the degraded validation photos:"
./build/pixflow test "$cfg" --checkpoint "$(latest work_dirs/demo_gan)"
echo "demo-gan: the demo_real model it started from, on the same photos:"
./build/pixflow test configs/demo_real.yaml --checkpoint "$(latest work_dirs/demo_real)"
echo "demo-gan: finished in $(( $(date +%s) - start )) s"
