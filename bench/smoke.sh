#!/usr/bin/env bash
# smoke — seconds-long runs of the benchmark pieces that have no script of their own, so that
# none of them can stop working unseen (ctest bench_smoke.<name>; bench/CMakeLists.txt). Each
# uses tiny inputs, times nothing worth reading, and checks that its output came out. Nothing is
# written to bench/results. Exit 0, 1 on a failure, 77 when what it needs is not here (PyTorch;
# a CUDA device for bench/gpu).
#
#   bench/smoke.sh dnnl_profile BUILD        ONEDNN_VERBOSE bench_train_step | dnnl_profile.py
#   bench/smoke.sh bench_loader BUILD        bench_loader on bench/smoke_data.py's images
#   bench/smoke.sh torch_demo_train BUILD    torch_demo_train.py, 2 iterations (PyTorch)
#   bench/smoke.sh gpu BUILD                 bench/gpu/run.sh's host-only mode (PF_CARRIED_ONLY:
#                                            no build) and pack.sh's syntax; the check itself
#                                            needs a CUDA device (77 without one)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
name=${1:?usage: bench/smoke.sh NAME BUILD}
build=$(cd "${2:-$root/build}" && pwd)
py=/usr/bin/python3
tmp=$(mktemp -d "${TMPDIR:-/tmp}/pixflow-bench-smoke.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# expect FILE PATTERN...: every extended regular expression matches a line of FILE.
expect() {
  local f=$1 p
  shift
  for p in "$@"; do
    grep -qE "$p" "$f" || { echo "smoke $name: no line matching '$p' in:" >&2; cat "$f" >&2; exit 1; }
  done
}

case "$name" in
dnnl_profile)
  ONEDNN_VERBOSE=1 OMP_NUM_THREADS=1 "$build/bench/bench_train_step" --only demo --smoke 1 \
    --warmup 1 --steps 1 --mark 1 | "$py" "$here/dnnl_profile.py" > "$tmp/out"
  cat "$tmp/out"
  expect "$tmp/out" '^per timed step \(1 averaged\): model call' '^  convolution +forward_training' \
    '^heaviest layer shapes' '^reference \(ref\) implementations:'
  ;;
bench_loader)
  "$py" "$here/smoke_data.py" "$tmp/data"
  sed -e "s#data/demo/#$tmp/data/#" "$root/configs/demo.yaml" > "$tmp/config.yaml"
  grep -q "gt_folder: $tmp/data/train" "$tmp/config.yaml" ||
    { echo "smoke bench_loader: configs/demo.yaml no longer reads data/demo/train" >&2; exit 1; }
  "$build/bench/bench_loader" "$tmp/config.yaml" > "$tmp/out"
  cat "$tmp/out"
  expect "$tmp/out" '^first touch .* of 4 images' '^pf_dataset_sample .*: [0-9]+ patches/s' \
    '^batches of 16 .*: [0-9]+ batches/s'
  ;;
torch_demo_train)
  "$py" -c 'import torch' 2>/dev/null ||
    { echo "smoke torch_demo_train: skipped: $py cannot import torch"; exit 77; }
  "$py" "$here/smoke_data.py" "$tmp/data"
  "$py" "$here/torch_demo_train.py" --iters 2 --eval-every 2 --batch 2 --gt-patch 32 \
    --data "$tmp/data" > "$tmp/out"
  cat "$tmp/out"
  expect "$tmp/out" '^data: 4 train, 2 val images' '^\[eval\] iter +2 +PSNR-Y net [0-9.]+' '^done: 2 iters'
  ;;
gpu)
  bash -n "$here/gpu/run.sh" && bash -n "$here/gpu/pack.sh"
  # no build, no carried binaries: it logs its header and says there is nothing to run (3)
  rc=0
  (cd "$tmp" && PF_CARRIED_ONLY=1 PF_RESULTS_DIR="$tmp/results" PATH="/usr/bin:/bin" \
     bash "$here/gpu/run.sh") > "$tmp/out" 2>&1 || rc=$?
  cat "$tmp/out"
  [ "$rc" = 3 ] || { echo "smoke gpu: run.sh with nothing to run exited $rc, expected 3" >&2; exit 1; }
  expect "$tmp/out" '^# PixFlow gpu_check, commit' '^## PF_CARRIED_ONLY: no build here' '^## nothing to run'
  ls "$tmp/results"/gpu_check_*.txt > /dev/null
  if ! command -v nvidia-smi > /dev/null || ! nvidia-smi -L > /dev/null 2>&1; then
    echo "smoke gpu: the check itself skipped: no CUDA device here (bench/gpu/README.md)"
    exit 77
  fi
  echo "smoke gpu: a CUDA device is here: run bench/gpu/run.sh itself"
  ;;
*)
  echo "usage: bench/smoke.sh dnnl_profile|bench_loader|torch_demo_train|gpu BUILD" >&2
  exit 2
  ;;
esac
echo "smoke $name: ok"
