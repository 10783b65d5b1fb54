#!/bin/bash
# run — loader throughput, all measured in one invocation, interleaved, so the ratios come from
# the same machine state:
#   pixflow  the demo pipeline (configs/demo.yaml: x2, GT 96, flips + transpose, batch 16) made
#            by 1 and by 2 real `pixflow loader` processes, dispatched by the real
#            `pixflow coordinator`, consumed by bench_loader_sink (a worker without a model;
#            the real checkpoint, eval and log hooks run too, the coordinator waits for them);
#   torch    the same pipeline in PyTorch's DataLoader (torch_loader.py), 1 and 2 workers,
#            reading PNGs for every sample (BasicSR's default) or decoding once per worker;
#   bytes    GT 224 batches (3.0 MB with LQ) through PixFlow (1 and 2 loaders) against a bare
#            libzmq PUSH/PULL pair moving the same messages (bench_zmq_pair), sending without a
#            copy as the loader does and with zmq_send's copy; once more with 1 loader and no
#            flips/transpose, to tell the data path's cost from augmentation's.
# Each round runs every measurement once (the pairs between the two GT 224 PixFlow runs they
# are compared with); REPS rounds; the summary takes medians and per-round ratios
# (summarize.py).
# Warm-up (first decode of every image) is excluded from every window.
#
# The job is configs/demo.yaml without its visual_config: the published figures were measured
# before demo.yaml had one, and the sink sends no pictures for a visual hook to draw, so the
# hooks the coordinator waits for are the checkpoint, eval and log hooks started here.
#
# usage: bench/loader/run.sh [--smoke] [BUILD_DIR]          (default: build)
#   needs BUILD_DIR/pixflow, BUILD_DIR/bench/loader/bench_loader_sink and bench_zmq_pair
#   (cmake --build BUILD_DIR --target pixflow bench_loader_sink bench_zmq_pair), data/demo
#   (scripts/fetch-demo-data.sh) and /usr/bin/python3 with torch, numpy, PIL.
#   environment: REPS (3), WINDOW seconds (12), WARMUP seconds (3), PREFETCH credits (16)
#   --smoke: each kind of measurement once on bench/smoke_data.py's images, 1 s windows, nothing
#   written to bench/results; checks that each produced its line and the summary its table
#   (ctest bench_smoke.loader). Without torch the PyTorch measurements are left out and it
#   exits 77 after the others.
# Writes bench/results/loader_<YYYY-MM-DD>_<short commit>.txt and prints it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
smoke=0
if [ "${1:-}" = --smoke ]; then smoke=1; shift; fi
build=$(cd "${1:-$root/build}" && pwd)
reps=${REPS:-3}
window=${WINDOW:-12}
warmup=${WARMUP:-3}
prefetch=${PREFETCH:-16}
[ "$smoke" = 0 ] || { reps=1; window=1; warmup=0.3; }
py=/usr/bin/python3
have_torch=1
"$py" -c 'import torch, numpy, PIL' 2>/dev/null || have_torch=0
if [ "$have_torch" = 0 ] && [ "$smoke" = 0 ]; then
  echo "run.sh: $py cannot import torch, numpy and PIL (the PyTorch side of the benchmark)" >&2
  exit 1
fi
pf="$build/pixflow"
sink="$build/bench/loader/bench_loader_sink"
pair="$build/bench/loader/bench_zmq_pair"
for f in "$pf" "$sink" "$pair"; do
  [ -x "$f" ] || { echo "run.sh: no $f (build it: see the usage above)" >&2; exit 1; }
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/pixflow-loader-bench.XXXXXX")
data="$root/data/demo"
if [ "$smoke" = 1 ]; then
  data="$tmp/data"
  "$py" "$here/../smoke_data.py" "$data"
fi
[ -d "$data/train" ] || { echo "run.sh: no data/demo/train (scripts/fetch-demo-data.sh)" >&2; rm -rf "$tmp"; exit 1; }
pids=()   # every process this script started and has not reaped yet
cleanup() {
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT

# Wait up to $2 seconds for process $1 to exit; returns its status, or 124 on timeout.
wait_for() {
  local i
  for ((i = 0; i < $2 * 10; i++)); do
    if ! kill -0 "$1" 2>/dev/null; then
      local rc=0
      wait "$1" || rc=$?
      return $rc
    fi
    sleep 0.1
  done
  return 124
}

# The job config: configs/demo.yaml without visual_config, with a run that outlasts the
# window, its own work_dir, PREFETCH credits, GT patch $2 and use_flip/use_rot $3 (true|false),
# the images of $data. Written to $1.
make_config() {
  sed -e "/^visual_config:/d" -e "s#data/demo/#$data/#" \
      -e "s#^total_iters: .*#total_iters: 1000000000#" \
      -e "s#^work_dir: .*#work_dir: $(dirname "$1")/work#" \
      -e "s#^  prefetch: .*#  prefetch: $prefetch#" \
      -e "s#^    gt_patch_size: .*#    gt_patch_size: $2#" \
      -e "s#^    use_flip: .*#    use_flip: $3#" \
      -e "s#^    use_rot: .*#    use_rot: $3#" "$root/configs/demo.yaml" > "$1"
  local want
  for want in "total_iters: 1000000000" "prefetch: $prefetch" "gt_patch_size: $2" \
              "use_flip: $3" "use_rot: $3" "work_dir: $(dirname "$1")/work"; do
    grep -q "^ *$want\$" "$1" || { echo "run.sh: configs/demo.yaml changed: cannot set '$want'" >&2; exit 1; }
  done
  # Each hook the config asks for must be started below: the coordinator waits for them.
  ! grep -q "^visual_config:" "$1" || { echo "run.sh: cannot remove visual_config from the config" >&2; exit 1; }
}

# One PixFlow measurement: $1 loaders, GT patch $2, flips and transpose ${3:-true}. Prints the
# sink's line.
n_job=0
pixflow_job() {
  local loaders=$1 patch=$2 dir="$tmp/job$((++n_job))" i
  mkdir -p "$dir"
  make_config "$dir/config.yaml" "$patch" "${3:-true}"
  (cd "$root" && exec "$pf" coordinator "$dir/config.yaml" --addr-file "$dir/addr") \
    > "$dir/coordinator.out" 2>&1 &
  local coord=$!
  pids+=("$coord")
  for ((i = 0; i < 100; i++)); do
    [ -s "$dir/addr" ] && break
    sleep 0.1
  done
  [ -s "$dir/addr" ] || { echo "run.sh: the coordinator did not start:" >&2; cat "$dir/coordinator.out" >&2; exit 1; }
  local addr args=() started=()
  addr=$(cat "$dir/addr")
  for i in checkpoint eval log; do
    (cd "$root" && exec "$pf" hook "$i" --connect "$addr") > "$dir/$i.out" 2>&1 &
    started+=($!)
    args+=(--pid "$i=$!")
  done
  for ((i = 1; i <= loaders; i++)); do
    (cd "$root" && exec "$pf" loader --connect "$addr" --name "loader$i") > "$dir/loader$i.out" 2>&1 &
    started+=($!)
    args+=(--loader-pid "$!")
  done
  pids+=("${started[@]}")
  if ! "$sink" --connect "$addr" --warmup "$warmup" --window "$window" --pid "coordinator=$coord" \
       "${args[@]}" 2> "$dir/sink.err"; then
    echo "run.sh: bench_loader_sink failed ($loaders loaders, GT $patch):" >&2
    tail -n 5 "$dir"/*.out "$dir/sink.err" >&2
    exit 1
  fi
  # The sink's DONE ends the job: the coordinator stops loaders and hooks and exits with 130.
  local rc=0
  wait_for "$coord" 20 || rc=$?
  [ "$rc" = 130 ] || { echo "run.sh: the coordinator ended with $rc, expected 130:" >&2; tail -n 5 "$dir/coordinator.out" >&2; exit 1; }
  for i in "${started[@]}"; do
    rc=0
    wait_for "$i" 10 || rc=$?
    [ "$rc" = 0 ] || { echo "run.sh: a loader or hook ended with $rc:" >&2; tail -n 3 "$dir"/*.out >&2; exit 1; }
  done
  pids=()
}

torch_job() {
  "$py" "$here/torch_loader.py" --data "$tmp/torch_data" --variant "$1" --workers "$2" \
    --warmup "$warmup" --window "$window"
}

# The bare libzmq pair for GT 224 batches; "$@": --copy for copying sends.
pair_job() {
  "$pair" --gt-patch 224 --batch 16 --scale 2 --hwm "$prefetch" --warmup "$warmup" \
    --window "$window" "$@"
}

commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)   # unknown without git
if [ "$smoke" = 1 ]; then
  out="$tmp/loader_smoke.txt"
else
  mkdir -p "$root/bench/results"
  out="$root/bench/results/loader_$(date +%F)_$commit.txt"
fi
lines="$tmp/lines.txt"
: > "$lines"
# Everything below goes to the terminal and to $out; the jobs run in this shell, so that
# cleanup() knows every process they started.
exec > >(tee "$out") 2>&1
echo "bench/loader/run.sh $(date -u '+%F %T UTC'), commit $commit, $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'))"
dirty=$(git -C "$root" status --porcelain -- loader coordinator proto common cli 2>/dev/null | tr '\n' ' ' || true)
echo "binaries from $build"
[ -z "$dirty" ] || echo "uncommitted product changes in this working tree (in the binaries if $build was built from it): $dirty"
echo "REPS=$reps WINDOW=${window}s WARMUP=${warmup}s PREFETCH=$prefetch; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
[ "$have_torch" = 0 ] || "$py" "$here/torch_loader.py" --prepare "$tmp/torch_data" --train "$data/train" 2>&1
jobs=("pixflow_job 1 96" "pixflow_job 2 96" "torch_job disk 1" "torch_job disk 2"
      "torch_job memory 1" "torch_job memory 2" "pixflow_job 1 224" "pair_job"
      "pair_job --copy" "pixflow_job 2 224" "pixflow_job 1 224 false")
# --smoke: each kind of measurement once (1 and 2 loaders or workers, both variants, both
# patch sizes, both pairs, no flips)
[ "$smoke" = 0 ] || jobs=("pixflow_job 1 96" "pixflow_job 2 96" "torch_job disk 1"
                          "torch_job memory 2" "pixflow_job 1 224" "pair_job" "pair_job --copy"
                          "pixflow_job 1 224 false")
n_jobs=0
for ((r = 1; r <= reps; r++)); do
  echo "--- round $r" | tee -a "$lines"
  for job in "${jobs[@]}"; do
    [ "$have_torch" = 1 ] || [ "${job#torch}" = "$job" ] || continue
    $job > "$tmp/line"
    cat "$tmp/line"
    cat "$tmp/line" >> "$lines"
    n_jobs=$((n_jobs + 1))
  done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
"$py" "$here/summarize.py" "$lines" | tee "$tmp/summary"
echo "written to $out"
if [ "$smoke" = 1 ]; then
  # one measurement line per job, and a summary with the per-core table
  got=$(grep -cE '^(sink|torch|zmq_pair) ' "$lines" || true)
  [ "$got" = "$n_jobs" ] || { echo "run.sh --smoke: $got measurement lines for $n_jobs jobs" >&2; exit 1; }
  [ -s "$tmp/summary" ] || { echo "run.sh --smoke: summarize.py printed nothing" >&2; exit 1; }
  if [ "$have_torch" = 0 ]; then
    echo "run.sh --smoke: skipped the PyTorch measurements: $py cannot import torch, numpy and PIL"
    exit 77
  fi
  echo "run.sh --smoke: $n_jobs measurements ran"
fi
