#!/usr/bin/env bash
# data_wait.sh — the worker's data wait on the real-world demo (configs/demo_real.yaml) with
# 1 and 2 loaders: ITERS iterations of `pixflow train` each (no evaluation: it starts at 500),
# then from work_dir/metrics.jsonl the mean s/iter and s waiting for data per iteration (the
# worker's `time` and `data_time`, averaged per log interval; the first interval, start-up, is
# left out) and the fraction of the step spent waiting.
#   bench/realesrgan/data_wait.sh [BUILD=build] [ITERS=400]
# Writes bench/results/realesrgan_data_wait_<host>_<date>.txt. Timings are this machine's: the
# loaders share its cores with the worker.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
BUILD="${1:-build}"
ITERS="${2:-400}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
out="bench/results/realesrgan_data_wait_$(hostname -s)_$(date +%F).txt"
{
    echo "# bench/realesrgan/data_wait.sh $BUILD $ITERS at $(git rev-parse --short HEAD) on $(hostname -s), $(date -u '+%F %T') UTC"
    echo "# CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores"
    for n in 1 2; do
        cfg="$tmp/demo_real_$n.yaml"
        sed -e "s|^total_iters: .*|total_iters: $ITERS|" -e "s|^work_dir: .*|work_dir: $tmp/wd$n|" \
            configs/demo_real.yaml > "$cfg"
        timeout 1800 "$BUILD/pixflow" train "$cfg" --loaders "$n" > "$tmp/train$n.log" 2>&1 ||
            { echo "data_wait: pixflow train --loaders $n failed:"; tail -20 "$tmp/train$n.log"; exit 1; }
        /usr/bin/python3 - "$tmp/wd$n/metrics.jsonl" "$n" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
rows = [r for r in rows if r.get("kind") == "train" and "data_time" in r][1:]
t = sum(r["time"] for r in rows) / len(rows)
d = sum(r["data_time"] for r in rows) / len(rows)
print(f"loaders {sys.argv[2]}: {1 / t:.2f} it/s, {t * 1000:.1f} ms/iter, data wait "
      f"{d * 1000:.2f} ms/iter ({100 * d / t:.1f}% of the step), {len(rows)} log intervals")
PY
    done
} | tee "$out"
echo "data_wait: wrote $out"
