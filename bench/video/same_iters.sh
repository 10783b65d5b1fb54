#!/usr/bin/env bash
# same_iters.sh — a video demo's recipe trained for the same number of iterations by PixFlow
# (pixflow train CONFIG, every role a process, eval every evaluation.interval iterations) and
# by PyTorch 1.13 (TORCH --iters N --eval-iters the same interval, same clips, same held-out
# crop, the config's num_feat / num_block / num_frame / batch / LQ patch / lr), one after the
# other. Prints both PSNR-Y gains over bicubic per evaluation and the difference at the end
# (issue 17's bar for BasicVSR: within 0.1 dB; issue 42's for BasicVSR++: 0.05 dB). The two
# draw different samples and initial weights (each from its own seed), so the curves agree in
# distribution, not bit for bit.
#   CONFIG configs/demo_video.yaml (default: BasicVSR x4, 16 feats, 2 blocks, 3 frames, batch
#   2, LQ 64, Charbonnier, Adam 1e-3; 480 iterations, about 2 x 10 minutes on 2 cores) or
#   configs/demo_video_pp.yaml (BasicVSR++ 16 / 1); TORCH: bench/video/torch_basicvsr.py for
#   model.type BasicVSR, bench/video/torch_basicvsrpp.py for BasicVSRPlusPlus (default by the
#   config's model.type). ITERS: default (or -) the config's total_iters.
# usage: bench/video/same_iters.sh [ITERS] [THREADS] [CONFIG] [TORCH]   (build/ built;
# data/demo_video fetched; Debian's /usr/bin/python3 with python3-torch, python3-torchvision)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
ITERS="${1:--}"
THREADS="${2:-2}"
CONFIG="${3:-configs/demo_video.yaml}"
TORCH="${4:-}"
export OMP_NUM_THREADS="$THREADS"
PIXFLOW="${PIXFLOW_BIN:-./build/pixflow}"   # a copy of the binary, to keep building meanwhile
get() { "$PIXFLOW" config "$CONFIG" --get "$1"; }
TYPE=$(get model.type)
MAG=()
case "$TYPE" in
    BasicVSR) : "${TORCH:=bench/video/torch_basicvsr.py}" ;;
    BasicVSRPlusPlus) : "${TORCH:=bench/video/torch_basicvsrpp.py}"
                      MAG=(--mag "$(get model.max_residue_magnitude)") ;;
    *) echo "same_iters.sh: $CONFIG: model.type $TYPE has no PyTorch side" >&2; exit 2 ;;
esac
[ "$ITERS" != - ] || ITERS=$(get total_iters)
EVAL=$(get evaluation.interval)
WORK="$(mktemp -d /tmp/pf_same_iters.XXXXXX)"
trap 'rm -rf "$WORK"' EXIT
sed -e "s|^total_iters:.*|total_iters: $ITERS|" -e "s|^work_dir:.*|work_dir: $WORK/pf|" \
    "$CONFIG" > "$WORK/demo.yaml"
echo "== PixFlow: pixflow train $CONFIG ($TYPE), $ITERS iterations"
"$PIXFLOW" train "$WORK/demo.yaml" > "$WORK/pf.out" 2>&1 || { tail -20 "$WORK/pf.out"; exit 1; }
echo "== PyTorch: $TORCH --iters $ITERS --eval-iters $EVAL"
/usr/bin/python3 "$TORCH" --iters "$ITERS" --eval-iters "$EVAL" --threads "$THREADS" \
    --feat "$(get model.n_feats)" --blocks "$(get model.n_blocks)" \
    --frames "$(get data.train.num_frame)" --batch "$(get data.samples_per_gpu)" \
    --lq-patch $(( $(get data.train.gt_patch_size) / $(get model.scale) )) \
    --lr "$(get optimizers.lr)" "${MAG[@]}" --json "$WORK/torch.json" | tee "$WORK/torch.out"
/usr/bin/python3 - "$WORK/pf/metrics.jsonl" "$WORK/torch.json" <<'PY'
import json, sys
pf = {}
for line in open(sys.argv[1]):
    try:
        o = json.loads(line)
    except ValueError:
        continue
    if o.get('kind') == 'eval':
        pf[int(o['iter'])] = o['psnr'] - o['psnr_bicubic']
tc = {c['iter']: c['gain'] for c in json.load(open(sys.argv[2]))['curve']}
print('iter  pixflow_gain  torch_gain  diff')
for it in sorted(set(pf) | set(tc)):
    a, b = pf.get(it), tc.get(it)
    fa = '%+.3f' % a if a is not None else '   -  '
    fb = '%+.3f' % b if b is not None else '   -  '
    fd = '%+.3f' % (a - b) if a is not None and b is not None else ''
    print('%4d  %12s  %10s  %s' % (it, fa, fb, fd))
last = max(set(pf) & set(tc))
d = pf[last] - tc[last]
print('end (iter %d): pixflow %+.3f dB, torch %+.3f dB over bicubic: |diff| %.3f dB '
      '(issue 17: <= 0.1, issue 42: <= 0.05)' % (last, pf[last], tc[last], abs(d)))
PY
