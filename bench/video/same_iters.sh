#!/usr/bin/env bash
# same_iters.sh — the video demo's recipe (configs/demo_video.yaml: BasicVSR x4, 16 feats,
# 2 blocks, 3 frames, batch 2, LQ 64, Charbonnier, Adam 1e-3) trained for the same number of
# iterations by PixFlow (pixflow train, every role a process, eval every 60 iterations) and by
# PyTorch 1.13 (bench/video/torch_basicvsr.py --iters N --eval-iters 60, same clips, same
# held-out crop), one after the other. Prints both PSNR-Y gains over bicubic per evaluation and
# the difference at the end (issue 17's bar: within 0.1 dB). The two draw different samples
# and initial weights (each from its own seed), so the curves agree in distribution, not
# bit for bit.
# usage: bench/video/same_iters.sh [ITERS] [THREADS]   (build/ built; data/demo_video fetched;
# Debian's /usr/bin/python3 with python3-torch). About 2 x 10 minutes on 2 cores.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
ITERS="${1:-480}"
THREADS="${2:-2}"
export OMP_NUM_THREADS="$THREADS"
PIXFLOW="${PIXFLOW_BIN:-./build/pixflow}"   # a copy of the binary, to keep building meanwhile
WORK="$(mktemp -d /tmp/pf_same_iters.XXXXXX)"
trap 'rm -rf "$WORK"' EXIT
sed -e "s|^total_iters:.*|total_iters: $ITERS|" -e "s|^work_dir:.*|work_dir: $WORK/pf|" \
    configs/demo_video.yaml > "$WORK/demo.yaml"
echo "== PixFlow: pixflow train, $ITERS iterations"
"$PIXFLOW" train "$WORK/demo.yaml" > "$WORK/pf.out" 2>&1 || { tail -20 "$WORK/pf.out"; exit 1; }
echo "== PyTorch: torch_basicvsr.py --iters $ITERS --eval-iters 60"
/usr/bin/python3 bench/video/torch_basicvsr.py --iters "$ITERS" --eval-iters 60 \
    --threads "$THREADS" --json "$WORK/torch.json" | tee "$WORK/torch.out"
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
print('end (iter %d): pixflow %+.3f dB, torch %+.3f dB over bicubic: |diff| %.3f dB %s 0.1'
      % (last, pf[last], tc[last], abs(d), '<=' if abs(d) <= 0.1 else '>'))
PY
