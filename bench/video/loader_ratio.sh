#!/usr/bin/env bash
# loader_ratio.sh — frame loading per core: PixFlow's loader work (bench_video_loader: one
# thread, pf_dataset_sample of configs/demo_video.yaml's training set, cache off and warm)
# against a PyTorch DataLoader with one worker reading the same clips
# (bench/video/torch_video_loader.py: PyAV + numpy MATLAB bicubic, BasicSR's sampling),
# one after the other. usage: bench/video/loader_ratio.sh [SAMPLES]  (build/ built,
# data/demo_video fetched, /usr/bin/python3 with python3-torch and python3-av)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
N="${1:-60}"
export OMP_NUM_THREADS=1
./build/bench/bench_video_loader configs/demo_video.yaml "$N"
/usr/bin/python3 bench/video/torch_video_loader.py --samples "$N" --workers 1
