#!/bin/bash
# quality/run.sh — training quality, PixFlow against PyTorch: the same recipe (the config as
# PixFlow resolves it: network, data, patch, batch, iterations, optimiser, LR schedule) trained
# by `pixflow train` and by bench/quality/torch_train.py, final PSNR-Y on data.eval of each.
# usage: bench/quality/run.sh [--smoke] [--build DIR] [--threads T] [--seed S] CONFIG...
# Writes bench/results/quality_<date>_<commit>.txt (and prints it). Sequential runs, so the
# two never share the cores; a run takes as long as the config's training.
# --smoke (no CONFIG): a 4-iteration EDSR 8 / 1 on bench/smoke_data.py's images through both,
# the results file in a temporary folder; checks that the result line came out (ctest
# bench_smoke.quality). Without torch: exits 77.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build="$root/build" threads=2 seed=0 configs=() smoke=0
usage="usage: $0 [--smoke] [--build DIR] [--threads T] [--seed S] CONFIG..."
while [ $# -gt 0 ]; do
  case "$1" in
    --smoke) smoke=1; shift ;;
    --build) build=$(cd "$2" && pwd); shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    -*) echo "$usage" >&2; exit 2 ;;
    *) configs+=("$1"); shift ;;
  esac
done
[ ${#configs[@]} -gt 0 ] || [ "$smoke" = 1 ] || { echo "$usage" >&2; exit 2; }
px="$build/pixflow"
[ -x "$px" ] || { echo "quality: no $px (build first)" >&2; exit 1; }
if ! /usr/bin/python3 -c 'import torch, yaml' 2>/dev/null; then
  echo "quality: skipped: /usr/bin/python3 cannot import torch and yaml (the PyTorch side)"
  exit 77
fi
cd "$root"
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)   # unknown without git
out="$root/bench/results/quality_$(date -u +%F)_$commit.txt"
tmp=$(mktemp -d /tmp/pf_quality_XXXXXX)
if [ "$smoke" = 1 ]; then
  out="$tmp/quality_smoke.txt"
  /usr/bin/python3 "$root/bench/smoke_data.py" "$tmp/data"
  cat > "$tmp/smoke.yaml" <<EOF
model: {type: EDSR, scale: 2, n_feats: 8, n_blocks: 1}
data:
  loaders: 1
  samples_per_gpu: 2
  train: {type: PairedImageDataset, gt_folder: $tmp/data/train, gt_patch_size: 32, repeat: 2}
  eval: {type: PairedImageDataset, gt_folder: $tmp/data/val}
optimizers: {type: Adam, lr: 1.0e-3}
total_iters: 4
checkpoint_config: {interval: 4}
log_config: {interval: 2}
evaluation: {interval: 4, metrics: [PSNR], crop_border: 2, convert_to: y}
work_dir: $tmp/unused
EOF
  configs=("$tmp/smoke.yaml")
fi
{
  echo "# PixFlow vs PyTorch training quality, $(date -u '+%F %T') UTC, commit $commit"
  echo "# threads $threads, seed $seed, load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
  printf '%-28s %10s %10s %8s %9s %9s\n' config pixflow_dB torch_dB diff pixflow_s torch_s
} | tee "$out"
for cfg in "${configs[@]}"; do
  name=$(basename "$cfg" .yaml)
  d="$tmp/$name"
  mkdir -p "$d"
  # the resolved recipe, with the work_dir moved into the scratch folder and this seed
  "$px" config "$cfg" | /usr/bin/python3 -c '
import sys, yaml
c = yaml.safe_load(sys.stdin); c["work_dir"] = sys.argv[1]; c["seed"] = int(sys.argv[2])
c["resume_from"] = None; c["load_from"] = None
yaml.safe_dump(c, open(sys.argv[3], "w"), sort_keys=False)' "$d/work" "$seed" "$d/config.yaml"
  t0=$(date +%s)
  "$px" train "$d/config.yaml" --threads "$threads" > "$d/pixflow.out" 2>&1 ||
    { echo "quality: pixflow train failed for $cfg; see $d/pixflow.out" >&2; tail -5 "$d/pixflow.out" >&2; exit 1; }
  t1=$(date +%s)
  pf=$(/usr/bin/python3 -c '
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1]) if "\"eval\"" in l]
ev = [e for e in ev if e.get("kind") == "eval" and "psnr" in e]
print("%.4f" % ev[-1]["psnr"])' "$d/work/metrics.jsonl")
  /usr/bin/python3 "$here/torch_train.py" "$d/config.yaml" --threads "$threads" --seed "$seed" \
    > "$d/torch.out" 2>&1 || { echo "quality: torch_train failed for $cfg; see $d/torch.out" >&2; tail -5 "$d/torch.out" >&2; exit 1; }
  t2=$(date +%s)
  pt=$(awk '/^final PSNR-Y/ { print $3 }' "$d/torch.out")
  awk -v n="$name" -v a="$pf" -v b="$pt" -v ta=$((t1 - t0)) -v tb=$((t2 - t1)) 'BEGIN {
    printf "%-28s %10.4f %10.4f %+8.4f %9d %9d %s\n", n, a, b, a - b, ta, tb,
           (a - b <= 0.1 && b - a <= 0.1) ? "within 0.1 dB" : "NOT within 0.1 dB" }' | tee -a "$out"
done
echo "# logs: $tmp" | tee -a "$out"
if [ "$smoke" = 1 ]; then
  grep -qE '^smoke +[0-9.]+ +[0-9.]+ ' "$out" ||
    { echo "quality --smoke: no result line in $out" >&2; exit 1; }
  echo "quality --smoke: both trainings ran and were evaluated"
  rm -rf "$tmp"
fi
