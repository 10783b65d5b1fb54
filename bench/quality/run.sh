#!/bin/bash
# quality/run.sh — training quality, PixFlow against PyTorch: the same recipe (the config as
# PixFlow resolves it: network, data, patch, batch, iterations, optimiser, LR schedule) trained
# by `pixflow train` and by bench/quality/torch_train.py, final PSNR-Y on data.eval of each.
# usage: bench/quality/run.sh [--build DIR] [--threads T] [--seed S] CONFIG...
# Writes bench/results/quality_<date>_<commit>.txt (and prints it). Sequential runs, so the
# two never share the cores; a run takes as long as the config's training.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build="$root/build" threads=2 seed=0 configs=()
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$(cd "$2" && pwd); shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    -*) echo "usage: $0 [--build DIR] [--threads T] [--seed S] CONFIG..." >&2; exit 2 ;;
    *) configs+=("$1"); shift ;;
  esac
done
[ ${#configs[@]} -gt 0 ] || { echo "usage: $0 [--build DIR] [--threads T] [--seed S] CONFIG..." >&2; exit 2; }
px="$build/pixflow"
[ -x "$px" ] || { echo "quality: no $px (build first)" >&2; exit 1; }
cd "$root"
commit=$(git rev-parse --short HEAD)
out="$root/bench/results/quality_$(date -u +%F)_$commit.txt"
tmp=$(mktemp -d /tmp/pf_quality_XXXXXX)
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
