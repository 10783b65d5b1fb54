#!/usr/bin/env bash
# mutations.sh [BUILD_DIR] — shows that the emulation catches what it is for: three mutations
# of nn/cuda/ops.cu, each applied, built into gpu_check_emu and run (`gpu_check_emu ops`), then
# reverted. Not a ctest entry (each rebuilds ops.cu); run by hand after changing tests/cuda_emu.
#   1 bounds:  k_add_scaled loops one element past count      -> AddressSanitizer
#   2 barrier: block_sum's first __syncthreads() removed       -> loss / norm values differ
#   3 order:   k_loss_partial: block 0 zeroes the partial sums  -> fails with the seeded block
#              every block adds into (right only when block 0     order, passes with PF_EMU_SEED=0
#              runs first)
# Exit 0 when every mutation is caught (and the third passes in index order), 1 otherwise.
set -uo pipefail
src="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build=${1:-$src/build}
ops=$src/nn/cuda/ops.cu
keep=$(mktemp)
cp "$ops" "$keep"
trap 'cp "$keep" "$ops"; rm -f "$keep"; cmake --build "$build" --target gpu_check_emu > /dev/null 2>&1' EXIT
export ASAN_OPTIONS=detect_leaks=0
fails=0
run() {                       # run NAME SEED: 0 when gpu_check_emu ops passes
    PF_EMU_SEED=$2 timeout 600 "$build/tests/cuda_host/gpu_check_emu" ops > "$build/mutation_$1.log" 2>&1
}
mutate() {                    # mutate NAME PYTHON_REPLACEMENT_OLD PYTHON_REPLACEMENT_NEW
    cp "$keep" "$ops"
    /usr/bin/env python3 - "$ops" "$2" "$3" << 'PY' || { echo "mutation $1: pattern not found" >&2; exit 1; }
import sys
p, old, new = sys.argv[1:]
s = open(p).read()
if old not in s: sys.exit(1)
open(p, "w").write(s.replace(old, new, 1))
PY
    cmake --build "$build" --target gpu_check_emu > /dev/null 2>&1 || { echo "mutation $1: build failed" >&2; exit 1; }
}
mutate bounds "GRID_STRIDE(i, count) y[i] = a[i] + s * b[i];" "GRID_STRIDE(i, count + 1) y[i] = a[i] + s * b[i];"
if run bounds 1; then echo "1 bounds: NOT caught"; fails=$((fails + 1))
else echo "1 bounds: caught ($(grep -m1 -o 'AddressSanitizer: [a-z-]*' "$build/mutation_bounds.log" || grep -m1 FAIL "$build/mutation_bounds.log"))"; fi
mutate barrier "    for (int half = THREADS / 2; half > 0; half /= 2) {
        __syncthreads();" "    for (int half = THREADS / 2; half > 0; half /= 2) {"
if run barrier 1; then echo "2 barrier: NOT caught"; fails=$((fails + 1))
else echo "2 barrier: caught ($(grep -c FAIL "$build/mutation_barrier.log") checks fail, e.g. $(grep -m1 FAIL "$build/mutation_barrier.log" | cut -c1-60))"; fi
mutate order "    if (threadIdx.x == 0) partial[blockIdx.x] = s[0];" "    if (blockIdx.x == 0 && threadIdx.x == 0)
        for (unsigned b = 0; b < gridDim.x; b++) partial[b] = 0.0;
    if (threadIdx.x == 0) partial[blockIdx.x] += s[0];"
if run order 1; then echo "3 order: NOT caught"; fails=$((fails + 1))
else echo "3 order: caught with the seeded order ($(grep -c FAIL "$build/mutation_order.log") checks fail)"; fi
if run order_in_index_order 0; then echo "3 order: passes with blocks in index order (PF_EMU_SEED=0): the shuffling is what catches it"
else echo "3 order: fails in index order too: the mutation does not isolate block order"; fails=$((fails + 1)); fi
exit $((fails > 0))
