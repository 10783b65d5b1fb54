#!/usr/bin/env bash
# bench/upscale/run.sh — images/s of `pixflow upscale` against bench/upscale/torch_upscale.py
# (PyTorch, the same network, weights, threads and tiles) on the same folder, alternating
# ROUNDS times; prints each run, the medians, their ratio and the largest difference between
# the two programs' outputs (grey levels), which should be 0 or 1 (float summation order);
# exits 1 when it is larger.
#   bench/upscale/run.sh BUILD WORK_DIR IN_DIR [THREADS=2] [ROUNDS=3] [TILE=0] [OVERLAP=0]
#       TILE > 0: both sides tile (`--tile TILE --tile-overlap OVERLAP`; torch_upscale.py
#       tiles as nn/infer.c does); 0: whole images
#   bench/upscale/run.sh --edsr-baseline BUILD IN_DIR SCALE [THREADS] [ROUNDS] [TILE] [OVERLAP]
#       the same on an EDSR-baseline-like network (64 features, 16 blocks, x SCALE, PyTorch's
#       default initialisation under torch.manual_seed(0)) written to a temporary work dir
#   bench/upscale/run.sh --smoke BUILD   (a tiny network and image, whole and tiled, nothing
#       timed; 77 without torch)
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PY=/usr/bin/python3
# make_work_dir DIR SCALE N_FEATS N_BLOCKS [IMAGE_DIR]: DIR/config.yaml and
# DIR/checkpoints/iter_1.safetensors of an EDSR with seeded weights (torch.manual_seed(0)); with
# IMAGE_DIR, a 24 x 20 PNG a.png written there too.
make_work_dir() {
    local d=$1 scale=$2 feats=$3 blocks=$4 img=${5:-}
    mkdir -p "$d/checkpoints"
    printf 'model: {type: EDSR, scale: %s, n_feats: %s, n_blocks: %s}\ndata: {test: {type: SingleImageDataset, lq_folder: %s}}\noptimizers: {lr: 1.0e-3}\ntotal_iters: 1\nwork_dir: %s\n' \
        "$scale" "$feats" "$blocks" "$d/in" "$d" > "$d/config.yaml"
    "$PY" -c "
import sys; sys.path.insert(0, '$HERE/../../tests/reference')
import numpy as np, st_io, zoo_archs, torch
from PIL import Image
torch.manual_seed(0)
net = zoo_archs.build('EDSR', $scale, n_feats=$feats, n_blocks=$blocks)
st_io.write('$d/checkpoints/iter_1.safetensors', net.state_dict().items(), {})
if '$img':
    Image.fromarray((np.arange(24*20*3) % 251).astype(np.uint8).reshape(20, 24, 3)).save('$img/a.png')"
}
case "${1:-}" in
--smoke)
    BUILD=$2
    "$PY" -c 'import torch, PIL, numpy' 2>/dev/null || { echo "bench upscale: no torch/PIL/numpy for $PY"; exit 77; }
    T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
    mkdir -p "$T/in"
    make_work_dir "$T/wd" 2 8 1 "$T/in"
    bash "$0" "$BUILD" "$T/wd" "$T/in" 1 1
    # tiles that do not divide 24 x 20, windows shifted inwards at the edges
    exec bash "$0" "$BUILD" "$T/wd" "$T/in" 1 1 7 3 ;;
--edsr-baseline)
    BUILD=$2 IN=$3 SCALE=$4
    shift 4
    T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
    make_work_dir "$T/wd" "$SCALE" 64 16
    echo "EDSR x$SCALE, 64 features, 16 blocks (torch.manual_seed(0) initialisation)"
    bash "$0" "$BUILD" "$T/wd" "$IN" "$@"
    exit ;;
esac
BUILD=$1 WD=$2 IN=$3 THREADS=${4:-2} ROUNDS=${5:-3} TILE=${6:-0} OVERLAP=${7:-0}
CFG="$WD/config.yaml"
get() { "$BUILD/pixflow" config "$CFG" --get "$1"; }
TYPE=$(get model.type) SCALE=$(get model.scale)
HP=()
case "$TYPE" in
    EDSR) HP=(n_feats=$(get model.n_feats) n_blocks=$(get model.n_blocks)) ;;
    *) echo "bench upscale: $TYPE: only EDSR is wired here"; exit 2 ;;
esac
TILING=()
[ "$TILE" -gt 0 ] && TILING=(--tile "$TILE" --tile-overlap "$OVERLAP")
echo "bench upscale: $TYPE x$SCALE ${HP[*]}, $THREADS threads, ${TILING[*]:-whole images}"
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
    "$BUILD/pixflow" upscale "$WD" "$IN" -o "$T/pf" --threads "$THREADS" "${TILING[@]}" 2> "$T/pf.log"
    # its own seconds, from after the model load to the last file, as torch_upscale.py's
    s=$(sed -n 's/.* outputs\? in .* (\([0-9.]*\) s)$/\1/p' "$T/pf.log")
    pf+=("$(echo "$N / $s" | bc -l)")
    th+=("$("$PY" "$HERE/torch_upscale.py" "$CK" "$IN" "$T/th" "$THREADS" "$TYPE" "$SCALE" "${HP[@]}" "${TILING[@]}" | sed 's/.*: \([0-9.]*\) img\/s.*/\1/')")
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
sys.exit(1 if d > 1 else 0)
PY
