#!/usr/bin/env bash
# coverage.sh OPS_CU RAN_FILE — every kernel launch of nn/cuda/ops.cu ran under the emulation.
#
# The launch sites are read from OPS_CU: each PF_LAUNCH(k_..., with the host function it is in
# (the last top-level definition above it that is not a __global__ / __device__ function).
# RAN_FILE holds the sites the emulated tests launched ("function kernel" lines, written by
# tests/cuda_emu/emu.cpp through PF_EMU_COVERAGE). Exit 0 when every site is there, 1 naming
# the sites that never ran (or when no site is found: the parse itself is wrong).
set -uo pipefail
ops=$1 ran=$2
[ -r "$ops" ] || { echo "coverage: cannot read $ops" >&2; exit 1; }
[ -r "$ran" ] || { echo "coverage: cannot read $ran (did the *.emu tests run?)" >&2; exit 1; }
fn="" sites=0 missing=0
def='^[A-Za-z_][A-Za-z0-9_ *]*[ *]([a-z_][a-z0-9_]*)\('
launch='PF_LAUNCH\((k_[a-z0-9_]+)'
while IFS= read -r line; do
    if [[ $line =~ $def ]]; then
        name=${BASH_REMATCH[1]}
        [[ $line =~ ^(__global__|__device__|static\ __device__) ]] || fn=$name
    fi
    if [[ $line =~ $launch ]]; then
        k=${BASH_REMATCH[1]}
        sites=$((sites + 1))
        if ! grep -qxF "$fn $k" "$ran"; then
            echo "coverage: never ran: $k launched in $fn" >&2
            missing=$((missing + 1))
        fi
    fi
done < "$ops"
if [ "$sites" -eq 0 ]; then
    echo "coverage: no PF_LAUNCH found in $ops" >&2
    exit 1
fi
echo "coverage: $((sites - missing)) of $sites kernel launches of $(basename "$ops") ran" \
     "under the emulation"
[ "$missing" -eq 0 ]
