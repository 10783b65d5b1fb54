#!/usr/bin/env bash
# run.sh — the one script for a session that has a GPU: build the CUDA backend, run gpu_check
# (every nn/cuda op, network and optimiser against the CPU), optionally the CPU test suite, and
# keep the output. The device image lacks the CPU backend's Debian libraries, so run
# bench/gpu/pack.sh on the build machine first and carry .gpu-carry (see bench/gpu/README.md).
#
#   bench/gpu/run.sh            # build + gpu_check
#   bench/gpu/run.sh --smoke    # ... and short end-to-end trainings on the GPU and the CPU
#   bench/gpu/run.sh --tests    # ... and ctest (the CPU tests) afterwards
#
# Output: bench/results/gpu_check_<UTC date>_<commit>.txt, copied under $OUT (the device tool
# fetches $OUT) after every step, so a run cut off at the tool's limit still brings back what
# it did. Exit status: gpu_check's (0 pass, 1 a check failed, 77 no CUDA device, 2 could not
# run), 3 when nothing could be built, 4 when a smoke training failed.
# It changes no GPU setting (clocks, persistence, MIG, ...); it only builds and runs programs.
set -u
[ -d /usr/local/cuda/bin ] && PATH="$PATH:/usr/local/cuda/bin"
cd "$(dirname "$0")/../.."
RUN_TESTS=0
SMOKE=0
for a in "$@"; do
  case "$a" in
    --tests) RUN_TESTS=1 ;;
    --smoke) SMOKE=1 ;;
    *) echo "run.sh: unknown argument $a (--smoke, --tests)" >&2; exit 2 ;;
  esac
done

COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then COMMIT="$COMMIT-dirty"; fi
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
RESULTS=${PF_RESULTS_DIR:-bench/results}   # bench/smoke.sh gpu: a temporary folder
mkdir -p "$RESULTS"
LOG="$RESULTS/gpu_check_${STAMP}_${COMMIT}.txt"
JOBS=$(nproc 2>/dev/null || echo 4)
[ "$JOBS" -gt 16 ] && JOBS=16

log() { echo "$@" | tee -a "$LOG"; }
save() { [ -n "${OUT:-}" ] && cp "$LOG" "$OUT"/ 2>/dev/null; return 0; }

{
  echo "# PixFlow gpu_check, commit $COMMIT, $(date -u '+%Y-%m-%d %H:%M:%S UTC'), host $(hostname)"
  if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | sed 's/^/# nvidia-smi: /'
  else
    echo "# nvidia-smi: not found"
  fi
  nvcc --version 2>&1 | tail -1 | sed 's/^/# nvcc: /'
} | tee "$LOG"

# 1. Build: the project's CMake build (the CPU dependencies must be installed), or, when that
#    cannot configure (e.g. a GPU machine without libzmq/oneDNN), gpu_check alone with nvcc.
#    PF_CARRIED_ONLY=1 skips this build and the nvcc-only one below (to try the carried
#    binaries on the build machine). PF_RESULTS_DIR replaces bench/results for the log.
CHECK=""
mkdir -p build-gpu
if [ -n "${PF_CARRIED_ONLY:-}" ]; then
  log "## PF_CARRIED_ONLY: no build here"
elif log "## cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release && cmake --build build-gpu -j$JOBS" &&
   cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release >build-gpu/configure.log 2>&1; then
  if cmake --build build-gpu -j"$JOBS" >build-gpu/build.log 2>&1; then
    CHECK=build-gpu/bench/gpu/gpu_check
  else
    log "## full build failed (tail of build-gpu/build.log):"; tail -20 build-gpu/build.log | tee -a "$LOG"
    # the CPU side may fail on its own; the CUDA targets alone may still build
    cmake --build build-gpu -j"$JOBS" --target gpu_check >>build-gpu/build.log 2>&1 &&
      CHECK=build-gpu/bench/gpu/gpu_check
  fi
else
  log "## cmake configure failed (tail of build-gpu/configure.log):"; tail -15 build-gpu/configure.log | tee -a "$LOG"
fi
# 1b. The binaries bench/gpu/pack.sh built on the Debian build machine (.gpu-carry/pack.tar.xz,
#     carried by the device tool, unpacked with python3 into .gpu-unpacked, outside the carried
#     folder so that it never travels): the whole check, CPU reference
#     included, where the CPU libraries are missing. cuDNN and NCCL come from the image's pip
#     packages (nvidia.cudnn, nvidia.nccl).
if [ -f .gpu-carry/pack.tar.xz ]; then
  rm -rf .gpu-unpacked
  python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
    .gpu-carry/pack.tar.xz .gpu-unpacked || log "## could not unpack .gpu-carry/pack.tar.xz"
fi
CARRIED=0
if [ -z "$CHECK" ] && [ -x .gpu-unpacked/bin/gpu_check ]; then
  NVLIB=$(python3 -c '
import importlib, os
dirs = []
for p in ("cudnn", "nccl", "cublas", "cuda_runtime"):
    try:
        dirs += [os.path.join(d, "lib") for d in importlib.import_module("nvidia." + p).__path__]
    except Exception:
        pass
print(":".join(dirs))' 2>/dev/null)
  export LD_LIBRARY_PATH="$PWD/.gpu-unpacked/lib:/usr/local/cuda/lib64${NVLIB:+:$NVLIB}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  log "## carried binaries of commit $(cat .gpu-unpacked/COMMIT 2>/dev/null) (bench/gpu/pack.sh; this tree: $COMMIT)"
  log "## LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
  if ldd .gpu-unpacked/bin/gpu_check 2>&1 | grep -q "not found"; then
    log "## the carried gpu_check cannot load:"; ldd .gpu-unpacked/bin/gpu_check 2>&1 | grep "not found" | tee -a "$LOG"
  else
    CHECK=.gpu-unpacked/bin/gpu_check
    CARRIED=1
  fi
fi
if [ -z "$CHECK" ] && [ -z "${PF_CARRIED_ONLY:-}" ]; then
  log "## fallback: gpu_check with nvcc alone"
  mkdir -p build-gpu-nvcc && rm -f build-gpu-nvcc/gpu_check
  if nvcc -O2 -I. -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 \
      nn/cuda/ops.cu nn/cuda/conv_cudnn.c nn/cuda/conv_bf16.c nn/cuda/dcn_cuda.c nn/cuda/linear_cuda.c nn/optim.c bench/gpu/gpu_check.c tests/cuda_host/ref_ops.c \
      -L/usr/local/cuda/lib64 -lcudnn -lcublas -Xlinker -rpath=/usr/local/cuda/lib64 \
      -o build-gpu-nvcc/gpu_check 2>&1 | tee -a "$LOG"; then
    [ -x build-gpu-nvcc/gpu_check ] && CHECK=build-gpu-nvcc/gpu_check
  fi
fi
if [ -z "$CHECK" ]; then
  log "## nothing to run: build failed"
  [ -n "${OUT:-}" ] && cp "$LOG" build-gpu/*.log "$OUT"/ 2>/dev/null
  exit 3
fi

# 2. The check (about a minute; 200 s is a hang).
save
log "## $CHECK"
timeout 200 "$CHECK" 2>&1 | tee -a "$LOG"
STATUS=${PIPESTATUS[0]}
log "## gpu_check exit status $STATUS"
save

# 2b. The NCCL collective on one rank, when the full build (or pack.sh) made it.
NCCL_CHECK=""
if [ "$CHECK" = build-gpu/bench/gpu/gpu_check ] &&
   cmake --build build-gpu -j"$JOBS" --target nccl_check >>build-gpu/build.log 2>&1; then
  NCCL_CHECK=build-gpu/bench/gpu/nccl_check
elif [ "$CARRIED" = 1 ] && [ -x .gpu-unpacked/bin/nccl_check ]; then
  NCCL_CHECK=.gpu-unpacked/bin/nccl_check
fi
if [ -n "$NCCL_CHECK" ]; then
  log "## $NCCL_CHECK"
  timeout 120 "$NCCL_CHECK" 2>&1 | tee -a "$LOG"
  NSTATUS=${PIPESTATUS[0]}
  log "## nccl_check exit status $NSTATUS"
  [ "$STATUS" = 0 ] && [ "$NSTATUS" != 0 ] && STATUS=$NSTATUS
fi

save

# 2c. --smoke: short end-to-end trainings (coordinator, loaders, worker, hooks, evaluation) of
#     EDSR (fp32, then bf16: train_cfg.precision) and of a graph network (MSRResNet) on the GPU,
#     then EDSR on the CPU with the same config and seed (the same batches): eval.log's PSNR
#     after 150 and 300 iterations.
if [ "$SMOKE" = 1 ]; then
  PIXFLOW=""
  [ "$CHECK" = build-gpu/bench/gpu/gpu_check ] && [ -x build-gpu/pixflow ] && PIXFLOW=build-gpu/pixflow
  [ -z "$PIXFLOW" ] && [ -x .gpu-unpacked/bin/pixflow ] && PIXFLOW=.gpu-unpacked/bin/pixflow
  if [ -z "$PIXFLOW" ] || [ ! -d .gpu-unpacked/data/train ]; then
    log "## smoke: no pixflow binary or no carried data (bench/gpu/pack.sh)"
  else
    mkdir -p work_dirs
    # the EDSR recipe again in bf16 (train_cfg.precision: cuDNN bf16 convolutions, issue 43)
    sed 's|^work_dir: *\(.*\)|work_dir: \1_bf16|' bench/gpu/smoke_edsr.yaml > work_dirs/smoke_edsr_bf16.yaml
    echo "train_cfg: {precision: bf16}" >> work_dirs/smoke_edsr_bf16.yaml
    for run in "smoke_edsr 1 100" "smoke_edsr_bf16 1 100" "smoke_msrresnet 1 100" "smoke_edsr 0 150"; do
      set -- $run
      cfg=bench/gpu/$1.yaml
      [ -f "$cfg" ] || cfg=work_dirs/$1.yaml
      wd=$(sed -n 's/^work_dir: *//p' "$cfg")
      rm -rf "$wd"
      log "## smoke: $PIXFLOW train $cfg --gpus $2 (limit $3 s)"
      t0=$(date +%s)
      timeout "$3" "$PIXFLOW" train "$cfg" --gpus "$2" >"$wd.out" 2>&1
      rc=$?
      log "## exit $rc after $(( $(date +%s) - t0 )) s; eval.log:"
      tail -n 12 "$wd/eval.log" 2>&1 | tee -a "$LOG"
      if [ "$rc" != 0 ]; then
        tail -n 25 "$wd.out" "$wd/rank0.log" 2>&1 | tee -a "$LOG"
        [ "$STATUS" = 0 ] && STATUS=4
      fi
      save
    done
  fi
fi

# 3. Optionally the CPU tests, to show the CUDA build did not disturb them.
if [ "$RUN_TESTS" = 1 ] && [ "$CHECK" = build-gpu/bench/gpu/gpu_check ]; then
  log "## ctest (CPU tests)"
  (cd build-gpu && timeout 600 ctest --output-on-failure -j4 2>&1) | tail -25 | tee -a "$LOG"
fi

log "## written to $LOG"
if [ -n "${OUT:-}" ]; then
  cp "$LOG" "$OUT"/ 2>/dev/null
  cp build-gpu/configure.log build-gpu/build.log "$OUT"/ 2>/dev/null
fi
exit "$STATUS"
