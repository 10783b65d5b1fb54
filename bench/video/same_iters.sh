#!/usr/bin/env bash
# same_iters.sh — a video demo's recipe trained for the same number of iterations by PixFlow
# (pixflow train CONFIG, every role a process, eval every evaluation.interval iterations) and
# by PyTorch 1.13 (TORCH --iters N --eval-iters the same interval, same clips, same held-out
# crop, the config's num_feat / num_block / num_frame / batch / LQ patch / lr), one after the
# other. Prints both PSNR-Y gains over bicubic per evaluation and the difference at the end
# (issue 17's bar for BasicVSR: within 0.1 dB; issue 42's for BasicVSR++: 0.05 dB). The two
# draw different samples and initial weights (each from its own seed), so the curves agree in
# distribution, not bit for bit.
#   --paired: the same start and the same batches on both sides, so the difference measures the
#   implementations, not the seed: PyTorch writes its seeded initial weights (--init-out),
#   scripts/pth2safetensors.py converts them, PixFlow trains from them (load_from) and dumps
#   every batch it trains on (PF_DUMP_BATCHES, worker/worker.c), then PyTorch trains from the
#   same weights on those batches (--init-in, --batches); PixFlow logs every step's loss
#   (log_config.interval 1) and both sides' losses are printed step by step. What is left to differ: float
#   rounding (summation orders, oneDNN's Winograd against PyTorch's kernels), which training
#   amplifies but does not steer.
#   env TORCH_THREADS: PyTorch's threads (default THREADS); KEEP_OUT=DIR: copy both logs and
#   metrics.jsonl there (the work folder is removed at exit).
#   CONFIG configs/demo_video.yaml (default: BasicVSR x4, 16 feats, 2 blocks, 3 frames, batch
#   2, LQ 64, Charbonnier, Adam 1e-3; 480 iterations, about 2 x 10 minutes on 2 cores) or
#   configs/demo_video_pp.yaml (BasicVSR++ 16 / 1); TORCH: bench/video/torch_basicvsr.py for
#   model.type BasicVSR, bench/video/torch_basicvsrpp.py for BasicVSRPlusPlus (default by the
#   config's model.type). ITERS: default (or -) the config's total_iters.
# usage: bench/video/same_iters.sh [--paired] [ITERS] [THREADS] [CONFIG] [TORCH]   (build/ built;
# data/demo_video fetched; Debian's /usr/bin/python3 with python3-torch, python3-torchvision)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
PAIRED=0
if [ "${1:-}" = --paired ]; then PAIRED=1; shift; fi
ITERS="${1:--}"
THREADS="${2:-2}"
CONFIG="${3:-configs/demo_video.yaml}"
TORCH="${4:-}"
export OMP_NUM_THREADS="$THREADS"
TORCH_THREADS="${TORCH_THREADS:-$THREADS}"
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
NET=(--feat "$(get model.n_feats)" --blocks "$(get model.n_blocks)" "${MAG[@]}")
PAIR=()
if [ "$PAIRED" = 1 ]; then
    echo "== paired: PyTorch's initial weights (seed $(get seed)) for both; PixFlow's batches for both"
    /usr/bin/python3 "$TORCH" "${NET[@]}" --seed "$(get seed)" --init-out "$WORK/init.pth"
    /usr/bin/python3 scripts/pth2safetensors.py "$WORK/init.pth" "$WORK/init.safetensors"
    sed -i -e '/^load_from:/d' -e 's|^log_config:.*|log_config: {interval: 1}|' "$WORK/demo.yaml"
    echo "load_from: $WORK/init.safetensors" >> "$WORK/demo.yaml"
    mkdir "$WORK/batches"
    export PF_DUMP_BATCHES="$WORK/batches"
    PAIR=(--init-in "$WORK/init.pth" --batches "$WORK/batches")
fi
echo "== PixFlow: pixflow train $CONFIG ($TYPE), $ITERS iterations"
"$PIXFLOW" train "$WORK/demo.yaml" > "$WORK/pf.out" 2>&1 || { tail -20 "$WORK/pf.out"; exit 1; }
unset PF_DUMP_BATCHES
echo "== PyTorch: $TORCH --iters $ITERS --eval-iters $EVAL ${PAIR[*]}"
/usr/bin/python3 "$TORCH" --iters "$ITERS" --eval-iters "$EVAL" --threads "$TORCH_THREADS" \
    "${NET[@]}" --frames "$(get data.train.num_frame)" --batch "$(get data.samples_per_gpu)" \
    --lq-patch $(( $(get data.train.gt_patch_size) / $(get model.scale) )) \
    --lr "$(get optimizers.lr)" "${PAIR[@]}" --json "$WORK/torch.json" | tee "$WORK/torch.out"
[ -z "${KEEP_OUT:-}" ] || cp "$WORK/pf.out" "$WORK/pf/metrics.jsonl" "$WORK/torch.out" "$KEEP_OUT"/
/usr/bin/python3 - "$WORK/pf/metrics.jsonl" "$WORK/torch.json" <<'PY'
import json, sys
pf, pf_loss = {}, {}
for line in open(sys.argv[1]):
    try:
        o = json.loads(line)
    except ValueError:
        continue
    if o.get('kind') == 'eval':
        pf[int(o['iter'])] = o['psnr'] - o['psnr_bicubic']
    elif o.get('kind') == 'train' and 'loss' in o:
        pf_loss[int(o['iter'])] = o['loss']
tj = json.load(open(sys.argv[2]))
tc = {c['iter']: c['gain'] for c in tj['curve']}
tl = tj.get('losses', [])
if pf_loss and tl:
    print('iter  pixflow_loss  torch_loss  rel_diff   (training loss of that step)')
    for it in sorted(pf_loss):
        if it <= len(tl):
            a, b = pf_loss[it], tl[it - 1]
            print('%4d  %12.6f  %10.6f  %.2e' % (it, a, b, abs(a - b) / max(abs(b), 1e-30)))
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
