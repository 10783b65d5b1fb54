#!/usr/bin/env bash
# bench/realesrgan/run.sh — one PixFlow loader's Real-ESRGAN pipeline (bench_realesrgan) against
# the same pipeline in PyTorch on the CPU (torch_realesrgan.py), one thread each, on the same
# GT crops (256 x 256 from the demo photos, scale 4, BasicSR's train_realesrnet_x4plus.yml
# options) and the same drawn parameters; ROUNDS alternating runs of N samples after a warm-up.
# Prints each run, the per-stage milliseconds, the medians and
# "pixflow/torch per core: X.XXx (goal >= 3x)" (the median of the rounds' ratios), and writes all of it to
# bench/results/realesrgan_<host>_<date>.txt.
#   bench/realesrgan/run.sh BUILD [N=200] [ROUNDS=3] [IMAGE...]   (default: data/demo/train/*.png)
#   bench/realesrgan/run.sh --smoke BUILD   (4 samples of 128 x 128, nothing written to
#       bench/results, no speed asserted; 77 without torch/PIL/scipy for /usr/bin/python3)
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
PY=/usr/bin/python3
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
# one core for both sides where taskset exists
PIN=()
command -v taskset > /dev/null && PIN=(taskset -c "$(taskset -cp $$ | sed 's/.*: //; s/[,-].*//')")
if [ "${1:-}" = --smoke ]; then
    BUILD=$2
    "$PY" -c 'import torch, PIL, numpy, scipy' 2>/dev/null || {
        echo "bench realesrgan: no torch/PIL/numpy/scipy for $PY"; exit 77; }
    T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
    "$PY" -c "
import numpy as np; from PIL import Image
Image.fromarray((np.arange(144*136*3) * 7 % 251).astype(np.uint8).reshape(136, 144, 3)).save('$T/a.png')"
    # the step-by-step pass must rebuild pf_realesrgan_degrade_u8's LQs (exit 1 otherwise)
    "$BUILD/bench/realesrgan/bench_realesrgan" --n 4 --warmup 1 --patch 128 \
        --crops "$T/crops.u8" --params "$T/params.txt" "$T/a.png"
    exec "$PY" "$HERE/torch_realesrgan.py" "$T/crops.u8" "$T/params.txt" 4 128 1
fi
BUILD=$1 N=${2:-200} ROUNDS=${3:-3}
shift $(( $# < 3 ? $# : 3 ))
IMAGES=("$@")
[ ${#IMAGES[@]} -gt 0 ] || IMAGES=("$ROOT"/data/demo/train/*.png)
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
CPU=$(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1)
OUT="$ROOT/bench/results/realesrgan_$(hostname)_$(date -u +%Y-%m-%d).txt"
{
echo "bench realesrgan: $(date -u +%FT%TZ), commit $(git -C "$ROOT" rev-parse --short HEAD)$(git -C "$ROOT" diff --quiet HEAD -- common bench || echo '+changes')"
echo "CPU: ${CPU:-unknown}, $(nproc --all) cores; pinned: ${PIN[*]:-no}; 1 thread each"
echo "GT 256 x 256 crops of ${#IMAGES[@]} images, scale 4, train_realesrnet_x4plus.yml options; N=$N per run, $ROUNDS rounds, 10 warm-up samples each"
echo "torch $("$PY" -c 'import torch; print(torch.__version__)'), PIL $("$PY" -c 'import PIL; print(PIL.__version__)')"
pf=() th=()
for r in $(seq "$ROUNDS"); do
    "${PIN[@]}" "$BUILD/bench/realesrgan/bench_realesrgan" --n "$N" --warmup 10 \
        --crops "$T/crops.u8" --params "$T/params.txt" "${IMAGES[@]}" | tee "$T/pf.txt"
    "${PIN[@]}" "$PY" "$HERE/torch_realesrgan.py" "$T/crops.u8" "$T/params.txt" "$N" 256 10 |
        tee "$T/th.txt"
    pf+=("$(sed -n 's/^pixflow: .*: \([0-9.]*\) samples\/s$/\1/p' "$T/pf.txt")")
    th+=("$(sed -n 's/^torch: .*: \([0-9.]*\) samples\/s$/\1/p' "$T/th.txt")")
done
"$PY" - "${pf[*]}" "${th[*]}" <<'PY'
import statistics, sys
pf = [float(x) for x in sys.argv[1].split()]
th = [float(x) for x in sys.argv[2].split()]
ratios = [a / b for a, b in zip(pf, th)]
print("per round pixflow/torch: " + " ".join("%.2fx" % r for r in ratios))
print("median: pixflow %.2f samples/s, torch %.2f samples/s" % (statistics.median(pf),
                                                                statistics.median(th)))
# each round's two runs are back to back, so their ratio is the fairer one on a shared machine
print("pixflow/torch per core: %.2fx (goal >= 3x; median of the rounds' ratios)" % (
    statistics.median(ratios)))
PY
} | tee "$T/report.txt"
mkdir -p "$(dirname "$OUT")"
cp "$T/report.txt" "$OUT"
echo "written: ${OUT#"$ROOT"/}"
