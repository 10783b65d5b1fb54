#!/usr/bin/env bash
# e2e_mpi — PixFlow under Debian's OpenMPI `mpirun` across the two nodes of
# scripts/test-cluster.sh (network namespaces nodea 10.203.0.1 and nodeb 10.203.0.2, each with
# its hostname; mpirun reaches nodeb through the cluster's rsh, its plm_rsh_agent):
# `mpirun --host nodea,nodeb --map-by ppr:1:node scripts/launch.sh --bind-addr 10.203.0.1
# CONFIG` runs one launcher per node, rank 0 with the coordinator and hooks.
#
# Checks:
#   1. exit 0; coordinator on nodea, a worker and a loader on each node; every iteration's batch
#      on both ranks and every logged loss equal `pixflow train CONFIG --workers 2` on one host;
#   2. mpirun killed with SIGKILL mid-run: every process the two launchers started ends within
#      10 s (OpenMPI's daemons end the launchers, whose watchdogs end the rest).
# Needs root (namespaces), slurm-wlm and munge (the test cluster) and openmpi-bin
# (bash scripts/setup.sh --test-deps); without them it says why and exits 77.
set -euo pipefail
unset PIXFLOW_KEYS

src=${PF_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
cluster=$src/scripts/test-cluster.sh
command -v mpirun > /dev/null ||
    { echo "SKIP: mpirun not found (bash scripts/setup.sh --test-deps installs openmpi-bin)"; exit 77; }
root=$(mktemp -d /tmp/pixflow_e2e_mpi.XXXXXX)
# shellcheck source=tests/lib_e2e.sh
. "$src/tests/lib_e2e.sh"  # write_config, wait_for, lines, fail, check, batches, losses, ...
mpi_pid=""
cleanup() {
    [ -z "$mpi_pid" ] || kill -KILL "$mpi_pid" 2> /dev/null || true
    bash "$cluster" down "$root/cluster" > /dev/null 2>&1 || true
    if [ "$fails" = 0 ]; then rm -rf "$root"; else echo "kept $root for a look" >&2; fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

cluster_up "$root/cluster"
rsh=$root/cluster/rsh

mkdir -p "$root/train"
cp "$data"/jpeg/{gray,photo,progressive,s444}.png "$root/train/"
export OMP_NUM_THREADS=1
iters=400
# mpirun CONFIG, from nodea, output in OUT (in the background: mpi_pid)
run_mpi() {  # OUT CONFIG
    "$rsh" nodea "cd $src && exec mpirun --allow-run-as-root --mca plm_rsh_agent $rsh \
        --mca oob_tcp_if_include 10.203.0.0/24 --host nodea,nodeb --map-by ppr:1:node \
        scripts/launch.sh --pixflow $bin --bind-addr 10.203.0.1 $2" > "$1" 2>&1 &
    mpi_pid=$!
}

ref=$root/ref
write_config "$root/ref.yaml" "$ref" "$iters" 100000 10
st=0
"$bin" train "$root/ref.yaml" --workers 2 --loaders 2 > "$root/ref.out" 2>&1 || st=$?
check "reference: pixflow train --workers 2 exit 0 (status $st; $root/ref.out)" test "$st" = 0

# ---- 1. the job under mpirun -------------------------------------------------------------------
wd=$root/work1 out=$root/mpi1.out
write_config "$root/one.yaml" "$wd" "$iters" 100000 10
run_mpi "$out" "$root/one.yaml"
st=0
wait "$mpi_pid" || st=$?
mpi_pid=""
check "mpirun: exit 0 (status $st; $out)" test "$st" = 0
check "mpirun: coordinator on nodea" grep -q "^\[nodea coordinator 0\] .*all roles present" "$out"
check "mpirun: a worker on each node, Gloo across them" eval \
    'grep -q "^\[nodea worker 0\] .*Gloo group: rank [01] of 2 on 10.203.0.1" "$out" &&
     grep -q "^\[nodeb worker 1\] .*Gloo group: rank [01] of 2 on 10.203.0.2" "$out"'
check "mpirun: a loader on each node served batches" eval \
    'grep -q "^\[nodea loader 0\] .*served [1-9]" "$out" && grep -q "^\[nodeb loader 1\] .*served [1-9]" "$out"'
for r in 0 1; do
    check "mpirun: rank $r's batches equal the reference's" \
        cmp -s <(batches "$wd" "$r") <(batches "$ref" "$r")
done
check "mpirun: every logged loss and lr equals the reference's" \
    cmp -s <(losses "$wd") <(losses "$ref")

# ---- 2. mpirun killed with SIGKILL ------------------------------------------------------------
wd=$root/work2 out=$root/mpi2.out
write_config "$root/two.yaml" "$wd" 100000 100000 10
run_mpi "$out" "$root/two.yaml"
if wait_for 120 lines "$wd/samples_rank0.log" 30 &&
   wait_for 30 test -s "$wd/launch/procs.rank0.tsv" -a -s "$wd/launch/procs.rank1.tsv"; then
    mapfile -t pids < <(awk -F'\t' 'FNR > 1 && $5 != "" { print $5 }' "$wd"/launch/procs.rank*.tsv)
    check "procs.rank0/1.tsv list 8 processes (nodea: coordinator, 3 hooks, worker, loader; nodeb: worker, loader)" \
        test "${#pids[@]}" = 8
    sigkill_launcher "mpirun SIGKILL" "$mpi_pid" "${pids[@]}"
    mpi_pid=""
    for p in "${pids[@]}"; do kill -KILL "$p" 2> /dev/null || true; done
else
    fail "the second mpirun job did not start within 120 s (see $out)"
fi

if [ "$fails" -gt 0 ]; then
    echo "e2e_mpi: $fails check(s) failed" >&2
    exit 1
fi
echo "e2e_mpi: all checks passed"
