#!/usr/bin/env bash
# run.sh — the one script for a session that has a GPU: build the CUDA backend, run gpu_check
# (every nn/cuda op against a CPU reference), optionally the CPU test suite, and keep the output.
#
#   bench/gpu/run.sh            # build + gpu_check
#   bench/gpu/run.sh --tests    # ... and ctest (the CPU tests) afterwards
#
# Output: bench/results/gpu_check_<UTC date>_<commit>.txt, and a copy under $OUT when set (the
# device tool fetches $OUT). Exit status: gpu_check's (0 pass, 1 a check failed, 77 no CUDA
# device, 2 could not run), or 3 when nothing could be built.
# It changes no GPU setting (clocks, persistence, MIG, ...); it only builds and runs programs.
set -u
[ -d /usr/local/cuda/bin ] && PATH="$PATH:/usr/local/cuda/bin"
cd "$(dirname "$0")/../.."
RUN_TESTS=0
[ "${1:-}" = "--tests" ] && RUN_TESTS=1

COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then COMMIT="$COMMIT-dirty"; fi
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p bench/results
LOG="bench/results/gpu_check_${STAMP}_${COMMIT}.txt"
JOBS=$(nproc 2>/dev/null || echo 4)
[ "$JOBS" -gt 16 ] && JOBS=16

log() { echo "$@" | tee -a "$LOG"; }

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
CHECK=""
mkdir -p build-gpu
log "## cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release && cmake --build build-gpu -j$JOBS"
if cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release >build-gpu/configure.log 2>&1; then
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
if [ -z "$CHECK" ]; then
  log "## fallback: gpu_check with nvcc alone"
  mkdir -p build-gpu-nvcc && rm -f build-gpu-nvcc/gpu_check
  if nvcc -O2 -I. -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 \
      nn/cuda/ops.cu nn/cuda/conv_cudnn.c nn/optim.c bench/gpu/gpu_check.c \
      -L/usr/local/cuda/lib64 -lcudnn -Xlinker -rpath=/usr/local/cuda/lib64 \
      -o build-gpu-nvcc/gpu_check 2>&1 | tee -a "$LOG"; then
    [ -x build-gpu-nvcc/gpu_check ] && CHECK=build-gpu-nvcc/gpu_check
  fi
fi
if [ -z "$CHECK" ]; then
  log "## nothing to run: build failed"
  [ -n "${OUT:-}" ] && cp "$LOG" build-gpu/*.log "$OUT"/ 2>/dev/null
  exit 3
fi

# 2. The check (a few seconds; 300 s is a hang).
log "## $CHECK"
timeout 300 "$CHECK" 2>&1 | tee -a "$LOG"
STATUS=${PIPESTATUS[0]}
log "## gpu_check exit status $STATUS"

# 2b. The NCCL collective on one rank, when the full build made it.
if [ "$CHECK" = build-gpu/bench/gpu/gpu_check ] &&
   cmake --build build-gpu -j"$JOBS" --target nccl_check >>build-gpu/build.log 2>&1; then
  log "## build-gpu/bench/gpu/nccl_check"
  timeout 120 build-gpu/bench/gpu/nccl_check 2>&1 | tee -a "$LOG"
  NSTATUS=${PIPESTATUS[0]}
  log "## nccl_check exit status $NSTATUS"
  [ "$STATUS" = 0 ] && [ "$NSTATUS" != 0 ] && STATUS=$NSTATUS
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
