#!/usr/bin/env bash
# bench/upscale/run.sh — images/s of `pixflow upscale` against bench/upscale/torch_upscale.py
# (PyTorch, the same network, weights, threads, whole images) on the same folder, alternating
# ROUNDS times; prints each run, the medians, their ratio and the largest difference between
# the two programs' outputs (grey levels), which should be 0 or 1 (float summation order).
#   bench/upscale/run.sh BUILD WORK_DIR IN_DIR [THREADS=2] [ROUNDS=3]
#   bench/upscale/run.sh --smoke BUILD   (a tiny network and image, nothing timed; 77 without torch)
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PY=/usr/bin/python3
if [ "${1:-}" = --smoke ]; then
    BUILD=$2
    "$PY" -c 'import torch, PIL, numpy' 2>/dev/null || { echo "bench upscale: no torch/PIL/numpy for $PY"; exit 77; }
    T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
    mkdir -p "$T/wd/checkpoints" "$T/in"
    printf 'model: {type: EDSR, scale: 2, n_feats: 8, n_blocks: 1}\ndata: {test: {type: SingleImageDataset, lq_folder: %s/in}}\noptimizers: {lr: 1.0e-3}\ntotal_iters: 1\nwork_dir: %s/wd\n' "$T" "$T" > "$T/wd/config.yaml"
    "$PY" -c "
import sys; sys.path.insert(0, '$HERE/../../tests/reference')
import numpy as np, st_io, zoo_archs, torch
from PIL import Image
torch.manual_seed(0)
net = zoo_archs.build('EDSR', 2, n_feats=8, n_blocks=1)
st_io.write('$T/wd/checkpoints/iter_1.safetensors', net.state_dict().items(), {})
Image.fromarray((np.arange(24*20*3) % 251).astype(np.uint8).reshape(20, 24, 3)).save('$T/in/a.png')"
    exec bash "$0" "$BUILD" "$T/wd" "$T/in" 1 1
fi
BUILD=$1 WD=$2 IN=$3 THREADS=${4:-2} ROUNDS=${5:-3}
CFG="$WD/config.yaml"
get() { "$BUILD/pixflow" config "$CFG" --get "$1"; }
TYPE=$(get model.type) SCALE=$(get model.scale)
HP=()
case "$TYPE" in
    EDSR) HP=(n_feats=$(get model.n_feats) n_blocks=$(get model.n_blocks)) ;;
    *) echo "bench upscale: $TYPE: only EDSR is wired here"; exit 2 ;;
esac
# the highest iter_N.safetensors, as pixflow upscale takes it
CK=$(for f in "$WD"/checkpoints/iter_*.safetensors; do
         n=${f##*/iter_}; n=${n%.safetensors}
         case $n in *[!0-9]*) ;; *) echo "$n $f" ;; esac
     done | sort -n | tail -1 | cut -d' ' -f2-)
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
N=$(ls "$IN"/*.png | wc -l)
pf=() th=()
for r in $(seq "$ROUNDS"); do
    rm -rf "$T/pf" "$T/th"
    "$BUILD/pixflow" upscale "$WD" "$IN" -o "$T/pf" --threads "$THREADS" 2> "$T/pf.log"
    # its own seconds, from after the model load to the last file, as torch_upscale.py's
    s=$(sed -n 's/.* outputs\? in .* (\([0-9.]*\) s)$/\1/p' "$T/pf.log")
    pf+=("$(echo "$N / $s" | bc -l)")
    th+=("$("$PY" "$HERE/torch_upscale.py" "$CK" "$IN" "$T/th" "$THREADS" "$TYPE" "$SCALE" "${HP[@]}" | sed 's/.*: \([0-9.]*\) img\/s.*/\1/')")
    printf 'round %d: pixflow %.3f img/s, torch %.3f img/s\n' "$r" "${pf[-1]}" "${th[-1]}"
done
"$PY" - "$T/pf" "$T/th" "${pf[*]}" "${th[*]}" <<'PY'
import os, sys, statistics
import numpy as np
from PIL import Image
a, b = sys.argv[1], sys.argv[2]
pf = [float(x) for x in sys.argv[3].split()]
th = [float(x) for x in sys.argv[4].split()]
d = max(int(np.abs(np.asarray(Image.open(os.path.join(a, n))).astype(int) -
                   np.asarray(Image.open(os.path.join(b, n))).astype(int)).max())
        for n in sorted(os.listdir(b)))
mp, mt = statistics.median(pf), statistics.median(th)
print("median: pixflow %.3f img/s, torch %.3f img/s, ratio x%.2f; outputs differ by at most %d" % (mp, mt, mp / mt, d))
PY
