#!/usr/bin/env bash
# soak — a long training job whose loaders are killed and replaced every minute (issue 4).
#
# Runs `pixflow train` on the demo images with a tiny EDSR (so batches flow fast) for DURATION
# seconds. Every KILL_EVERY seconds the oldest live loader is killed — SIGKILL and SIGTERM in
# turn — and a new `pixflow loader --connect ADDR` is started by hand. Every SAMPLE_EVERY
# seconds the resident memory (RSS) of every PixFlow process is recorded. At the end the job
# is interrupted (SIGINT: it checkpoints and stops) and the worker's samples log is checked:
# every iteration exactly once, every complete epoch delivers each sample exactly once.
#
# Usage: bash bench/soak/run.sh [--smoke] [BUILD_DIR] [DURATION_S] [KILL_EVERY_S]
#        (defaults: build, 1200, 60). Output: bench/results/soak_<date>_<commit>.txt
#        --smoke: 10 s, a loader replaced every 3 s, on bench/smoke_data.py's images, the
#        output in the temporary work folder; checks that loaders were replaced and every
#        sample came exactly once (ctest bench_smoke.soak).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
SMOKE=0
if [ "${1:-}" = --smoke ]; then SMOKE=1; shift; fi
BUILD="${1:-build}"
DURATION="${2:-1200}"
KILL_EVERY="${3:-60}"
SAMPLE_EVERY=10
[ "$SMOKE" = 0 ] || { DURATION=10; KILL_EVERY=3; SAMPLE_EVERY=1; }
cd "$ROOT"
PIXFLOW="$(cd "$BUILD" && pwd)/pixflow"
[ -x "$PIXFLOW" ] || { echo "soak: no $PIXFLOW; build first" >&2; exit 1; }
WORK="$(mktemp -d /tmp/pixflow-soak.XXXXXX)"
DATA="$ROOT/data/demo/train"
if [ "$SMOKE" = 1 ]; then
  /usr/bin/python3 bench/smoke_data.py "$WORK/data"
  DATA="$WORK/data/train"
  OUT="$WORK/soak_smoke.txt"
else
  [ -d data/demo/train ] || bash scripts/fetch-demo-data.sh
  RESULTS="$ROOT/bench/results"
  mkdir -p "$RESULTS"
  OUT="$RESULTS/soak_$(date +%F)_$(git rev-parse --short HEAD 2>/dev/null || echo unknown).txt"
fi

cat >"$WORK/soak.yaml" <<EOF
model:
  type: EDSR
  scale: 2
  n_feats: 16
  n_blocks: 1
data:
  loaders: 2
  samples_per_gpu: 8
  prefetch: 4
  cache_mb: 64
  train:
    gt_folder: $DATA
    gt_patch_size: 96
    use_flip: true
    use_rot: true
    repeat: 16
optimizers: {type: Adam, lr: 1.0e-4}
total_iters: 100000000
checkpoint_config: {interval: 100000000}
log_config: {interval: 100}
work_dir: $WORK/job
seed: 0
log_level: info
EOF

"$PIXFLOW" train "$WORK/soak.yaml" >"$WORK/train.out" 2>&1 &
JOB=$!
for _ in $(seq 100); do [ -s "$WORK/job/coordinator.addr" ] && break; sleep 0.2; done
ADDR="$(cat "$WORK/job/coordinator.addr")"
echo "soak: job $JOB at $ADDR, work in $WORK, ${DURATION}s, a loader replaced every ${KILL_EVERY}s"

# "pid role" of every process of this job, oldest first. The front end starts its children
# with argv[0] = the role ("loader --connect ..."); by hand it is ".../pixflow loader ...".
procs() {
    ps -eo pid=,args= --sort=start_time | awk -v a="$ADDR" -v w="$WORK" '
        index($0, a) || index($0, w) {
            i = ($2 ~ /pixflow$/) ? 3 : 2
            role = $i; if (role == "hook") role = role "-" $(i + 1)
            if (role ~ /^(train|coordinator|loader|worker|hook-.*)$/) print $1, role }'
}
rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status" 2>/dev/null || echo 0; }

MEM="$WORK/memory.tsv"
echo -e "t_s\tpid\trole\trss_kib" >"$MEM"
start=$(date +%s)
next_kill=$((start + KILL_EVERY))
kills=0
extra=()
while :; do
    now=$(date +%s)
    [ $((now - start)) -ge "$DURATION" ] && break
    kill -0 "$JOB" 2>/dev/null || { echo "soak: the job ended early" >&2; cat "$WORK/train.out" >&2; exit 1; }
    while read -r pid role; do
        echo -e "$((now - start))\t$pid\t$role\t$(rss_kib "$pid")" >>"$MEM"
    done < <(procs)
    if [ "$now" -ge "$next_kill" ]; then
        victim=$(procs | awk '$2 == "loader" { print $1; exit }')
        if [ -n "$victim" ]; then
            sig=$([ $((kills % 2)) -eq 0 ] && echo KILL || echo TERM)
            kill -s "$sig" "$victim" 2>/dev/null || true
            kills=$((kills + 1))
            echo "soak: t=$((now - start))s SIG$sig loader $victim"
        fi
        "$PIXFLOW" loader --connect "$ADDR" --name "soak-loader-$kills" \
            >"$WORK/loader-$kills.out" 2>&1 &
        extra+=($!)
        next_kill=$((next_kill + KILL_EVERY))
    fi
    sleep "$SAMPLE_EVERY"
done
kill -INT "$JOB"
rc=0
wait "$JOB" || rc=$?
for p in "${extra[@]}"; do kill "$p" 2>/dev/null || true; done
wait 2>/dev/null || true

/usr/bin/python3 - "$WORK" "$MEM" "$rc" "$kills" "$DURATION" >"$OUT" <<'EOF'
import collections, statistics, sys
work, mem, rc, kills, duration = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
print(f"soak: {duration} s, {kills} loaders killed and replaced, job exit status {rc} (130 = interrupted as planned)")
iters, per_epoch, n_samples, loaders = {}, collections.defaultdict(list), 0, collections.Counter()
for line in open(f"{work}/job/samples_rank0.log"):
    f = line.split()
    if len(f) < 5 or not f[0].lstrip('-').isdigit():
        continue
    it, ep, ids = int(f[0]), int(f[1]), [int(x) for x in f[3].split(",")]
    if it in iters:
        print(f"FAIL: iteration {it} delivered twice")
    iters[it] = ep
    per_epoch[ep] += ids
    n_samples += len(ids)
    loaders[f[5]] += 1
missing = [i for i in range(max(iters) + 1) if i not in iters] if iters else []
print(f"iterations: {len(iters)} (0..{max(iters) if iters else -1}), missing {len(missing)}; samples {n_samples}; batches by loader: {len(loaders)} loaders")
epochs = sorted(per_epoch)
size = max(len(v) for v in per_epoch.values())
bad = 0
for e in epochs[:-1]:                      # the last epoch may be cut by the interrupt
    ids = per_epoch[e]
    if sorted(ids) != list(range(size)) :
        bad += 1
        dup = [k for k, c in collections.Counter(ids).items() if c > 1]
        print(f"FAIL: epoch {e}: {len(ids)} samples, {len(set(ids))} distinct, duplicates {dup[:5]}")
print(f"complete epochs checked: {len(epochs) - 1}, each {size} samples exactly once: {'yes' if bad == 0 and not missing else 'NO'}")
rows = [l.rstrip("\n").split("\t") for l in open(mem)][1:]
by = collections.defaultdict(list)
for t, pid, role, rss in rows:
    by[(role, pid)].append((int(t), int(rss)))
print("\nresident memory (MiB): process, first sample after 60 s of its life, last, max")
roles = collections.defaultdict(list)
for (role, pid), s in sorted(by.items(), key=lambda kv: kv[1][0][0]):
    t0 = s[0][0]
    settled = [r for t, r in s if t >= t0 + 60] or [s[-1][1]]
    first, last, peak = settled[0] / 1024, s[-1][1] / 1024, max(r for _, r in s) / 1024
    roles[role].append((first, last, peak))
    if role != "loader" or len(s) * 10 >= 120:
        print(f"  {role:16s} pid {pid:>7s}: {first:7.1f} {last:7.1f} {peak:7.1f}  ({len(s)} samples over {s[-1][0] - t0} s)")
for role, v in roles.items():
    growth = max(l - f for f, l, _ in v)
    print(f"  {role}: {len(v)} process(es), largest growth after settling {growth:+.1f} MiB")
EOF
cat "$OUT"
echo "soak: figures in $OUT; job files in $WORK"
if [ "$SMOKE" = 1 ]; then
  grep -q "loaders killed and replaced, job exit status 130" "$OUT" && [ "$kills" -ge 2 ] &&
    grep -q "exactly once: yes" "$OUT" && ! grep -q "^FAIL" "$OUT" ||
    { echo "soak --smoke: $kills loaders replaced; the figures above are not as expected" >&2; exit 1; }
  echo "soak --smoke: $kills loaders replaced, every sample exactly once"
  rm -rf "$WORK"
fi
