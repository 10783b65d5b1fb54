#!/usr/bin/env bash
# e2e_slurm — PixFlow under Debian's Slurm on a two-node cluster on this machine
# (scripts/test-cluster.sh: slurmctld and two slurmd, each in its own network namespace and
# hostname, munge), through the batch script a lab copies (scripts/pixflow.sbatch ->
# scripts/launch.sh, each process a job step on its node).
#
# Checks:
#   1. `sbatch --nodes=2 scripts/pixflow.sbatch CONFIG`: exit 0; coordinator and hooks on nodea,
#      one CPU worker per node (Gloo across the two namespaces), a loader on each; every
#      iteration's batch (iteration, epoch, sample ids, pixel digest) on both ranks and every
#      logged loss and learning rate equal those of `pixflow train CONFIG --workers 2` run here
#      on one host (the reference);
#   2. `scancel` mid-run: the job checkpoints and stops in order (launch.sh says so, the
#      workers wrote the checkpoint); sbatch again with `-- --resume auto`: it continues from
#      that checkpoint to the end, and batches and losses after the resume equal the reference's;
#   0. the launcher's dry run under Slurm's --gpus-per-node=a100:2: two workers per node on
#      cuda:0, CUDA_VISIBLE_DEVICES the node's i-th GPU (evaluated in sh: 0 1, or 3 5 of 3,5);
#   3. a node's processes killed mid-run (SIGKILL to everything PixFlow runs on nodeb): the job
#      ends, and the launcher's summary names host, role, rank, pid and status of each.
# Needs root (namespaces), slurm-wlm and munge (bash scripts/setup.sh --test-deps); without
# them it says why and exits 77 (ctest: skipped).
set -euo pipefail
unset PIXFLOW_KEYS

src=${PF_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
cluster=$src/scripts/test-cluster.sh
root=$(mktemp -d /tmp/pixflow_e2e_slurm.XXXXXX)
# shellcheck source=tests/lib_e2e.sh
. "$src/tests/lib_e2e.sh"  # write_config, wait_for, lines, fail, check, batches, losses, ...
cleanup() {
    bash "$cluster" down "$root/cluster" > /dev/null 2>&1 || true
    if [ "$fails" = 0 ]; then rm -rf "$root"; else echo "kept $root for a look" >&2; fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

cluster_up "$root/cluster"
on() { bash "$cluster" run "$root/cluster" "$@"; }  # NODE COMMAND...

mkdir -p "$root/train"
cp "$data"/jpeg/{gray,photo,progressive,s444}.png "$root/train/"
export OMP_NUM_THREADS=1
iters=400
# Lines of file $1 whose first field (the iteration) is > $2, the last per iteration.
after() { awk -v k="$2" '$1 > k { v[$1] = $0 } END { for (i in v) print v[i] }' "$1" | sort -n; }
job_gone() { [ -z "$(on ctl squeue -h -j "$1" 2> /dev/null)" ]; }
# Until FILE has N lines; 1 at once when job JOB has left the queue first.
progress() {  # JOB FILE N
    local end=$((SECONDS + 120))
    until lines "$2" "$3"; do
        if job_gone "$1" || [ "$SECONDS" -ge "$end" ]; then lines "$2" "$3"; return; fi
        sleep 0.2
    done
}
submit() {  # OUT CONFIG [ARGS]: prints the job id
    on ctl sbatch --parsable --nodes=2 --chdir="$src" --output="$1" \
        --export=ALL,PIXFLOW_BIND_ADDR=10.203.0.1 "$src/scripts/pixflow.sbatch" "${@:2}"
}

# ---- reference: pixflow train --workers 2 on this host ------------------------------------------
ref=$root/ref
write_config "$root/ref.yaml" "$ref" "$iters" 100000 10
st=0
"$bin" train "$root/ref.yaml" --workers 2 --loaders 2 > "$root/ref.out" 2>&1 || st=$?
check "reference: pixflow train --workers 2 exit 0 (status $st; $root/ref.out)" test "$st" = 0
batches "$ref" 0 > "$root/ref.b0"
batches "$ref" 1 > "$root/ref.b1"
losses "$ref" > "$root/ref.loss"
check "reference: $iters batches per rank, $((iters / 10)) losses" \
    test "$(wc -l < "$root/ref.b0")" = "$iters" -a "$(wc -l < "$root/ref.loss")" = $((iters / 10))

# ---- 0. the launcher's dry run with Slurm's --gpus-per-node=a100:2 -----------------------------
dry=$root/dry.txt
on ctl env SLURM_JOB_NODELIST=nodea,nodeb SLURM_GPUS_PER_NODE=a100:2 SLURM_NTASKS_PER_NODE=1 \
    bash "$src/scripts/launch.sh" --dry-run --bind-addr 10.203.0.1 "$root/ref.yaml" > "$dry" 2>&1 || true
check "dry run: two GPU workers on each node, each on cuda:0 ($dry)" eval \
    'test "$(grep -c "^nodea	worker	.*--device. .cuda:0" "$dry")" = 2 &&
     test "$(grep -c "^nodeb	worker	.*--device. .cuda:0" "$dry")" = 2'
# each worker's CUDA_VISIBLE_DEVICES, evaluated as its node's shell would: the i-th of the
# node's own list (Slurm's in a job step), else i
gpu_of() {  # WORKER_RANK NODE_LIST: what it picks (or its error)
    local pick
    pick=$(awk -F'\t' -v r="$1" '$2 == "worker" && $3 == r { print $4 }' "$dry" |
        sed -n 's/\(.*CUDA_VISIBLE_DEVICES=\$g\) .*/\1/p')
    if [ -n "$2" ]; then CUDA_VISIBLE_DEVICES=$2 sh -c "$pick; echo \$CUDA_VISIBLE_DEVICES" 2>&1
    else env -u CUDA_VISIBLE_DEVICES sh -c "$pick; echo \$CUDA_VISIBLE_DEVICES" 2>&1; fi
}
check "dry run: workers 0..3 take GPUs 0 1 0 1 of their node, 3 5 3 5 of a node's list 3,5" \
    test "$(gpu_of 0 '') $(gpu_of 1 '') $(gpu_of 2 '') $(gpu_of 3 '') / $(gpu_of 0 3,5) $(gpu_of 1 3,5) $(gpu_of 2 3,5) $(gpu_of 3 3,5)" = "0 1 0 1 / 3 5 3 5"
check "dry run: a node listing one GPU for two workers: worker 1 fails saying so" \
    test "$(gpu_of 1 7)" = "launch: worker 1: GPU 2 of 2 wanted, CUDA_VISIBLE_DEVICES=7 lists fewer"

# ---- 1. sbatch across both nodes ----------------------------------------------------------------
wd=$root/work1 out=$root/job1.out
write_config "$root/one.yaml" "$wd" "$iters" 100000 10
st=0
on ctl sbatch --wait --nodes=2 --chdir="$src" --output="$out" \
    --export=ALL,PIXFLOW_BIND_ADDR=10.203.0.1 "$src/scripts/pixflow.sbatch" "$root/one.yaml" \
    > /dev/null || st=$?
check "sbatch: the job ended with exit 0 (status $st; $out)" test "$st" = 0
check "sbatch: coordinator on nodea" grep -q "^\[nodea coordinator 0\] .*all roles present" "$out"
# (the coordinator numbers workers in the order they join)
check "sbatch: one worker per node, Gloo across them" eval \
    'grep -q "^\[nodea worker 0\] .*Gloo group: rank [01] of 2 on 10.203.0.1" "$out" &&
     grep -q "^\[nodeb worker 1\] .*Gloo group: rank [01] of 2 on 10.203.0.2" "$out"'
check "sbatch: a loader on each node served batches" eval \
    'grep -q "^\[nodea loader 0\] .*served [1-9]" "$out" && grep -q "^\[nodeb loader 1\] .*served [1-9]" "$out"'
check "sbatch: rank 0's batches equal the reference's" cmp -s <(batches "$wd" 0) "$root/ref.b0"
check "sbatch: rank 1's batches equal the reference's" cmp -s <(batches "$wd" 1) "$root/ref.b1"
check "sbatch: every logged loss and lr equals the reference's" cmp -s <(losses "$wd") "$root/ref.loss"

# ---- 2. scancel: checkpoint and stop; sbatch -- --resume auto continues -----------------------
wd=$root/work2 out=$root/job2.out
write_config "$root/two.yaml" "$wd" "$iters" 100000 10
job=$(submit "$out" "$root/two.yaml")
if progress "$job" "$wd/samples_rank0.log" 60; then
    on ctl scancel "$job"
    check "scancel: the job left the queue within 30 s" wait_for 30 job_gone "$job"
    wait_for 10 grep -q "^launch: stopped with a checkpoint" "$out" || true
    check "scancel: launch.sh says the job stopped with a checkpoint ($out)" \
        grep -q "^launch: stopped with a checkpoint" "$out"
    check "scancel: a checkpoint was written" test -s "$wd/checkpoints/latest"
    k=$(sed -n 's/^iter_\([0-9]*\)\.safetensors$/\1/p' "$wd/checkpoints/latest" 2> /dev/null)
    check "scancel: it stopped mid-run (checkpoint of iteration ${k:-none} < $iters)" \
        test -n "$k" -a "${k:-0}" -lt "$iters"
    out=$root/job2b.out
    st=0
    on ctl sbatch --wait --nodes=2 --chdir="$src" --output="$out" \
        --export=ALL,PIXFLOW_BIND_ADDR=10.203.0.1 "$src/scripts/pixflow.sbatch" \
        "$root/two.yaml" -- --resume auto > /dev/null || st=$?
    check "resume: exit 0 (status $st; $out)" test "$st" = 0
    k=${k:-0}
    for r in 0 1; do
        check "resume: rank $r's batches after iteration $k equal the reference's" \
            cmp -s <(batches "$wd" "$r" | after /dev/stdin "$k") <(after "$root/ref.b$r" "$k")
    done
    check "resume: every iteration once or more, up to $iters" \
        test "$(batches "$wd" 0 | cut -d' ' -f1 | sort -un | wc -l)" = "$iters"
    # the first log line after the resume averages fewer iterations: compare from the next
    check "resume: losses after iteration $((k + 10)) equal the reference's" \
        cmp -s <(losses "$wd" | after /dev/stdin $((k + 10))) <(after "$root/ref.loss" $((k + 10)))
else
    fail "the scancel job did not start within 120 s, or ended (see $out)"
fi

# ---- 3. nodeb's processes killed mid-run: the summary names them ------------------------------
wd=$root/work3 out=$root/job3.out
write_config "$root/three.yaml" "$wd" 100000 100000 10
job=$(submit "$out" "$root/three.yaml")
if progress "$job" "$wd/samples_rank0.log" 30 && wait_for 30 test -s "$wd/launch/procs.tsv"; then
    mapfile -t victims < <(awk -F'\t' '$2 == "nodeb" { print $5 }' "$wd/launch/procs.tsv")
    check "procs.tsv lists nodeb's worker and loader" test "${#victims[@]}" = 2
    kill -KILL "${victims[@]}" 2> /dev/null || true
    check "node lost: the job left the queue within 60 s" wait_for 60 job_gone "$job"
    wait_for 10 grep -q "did not end cleanly" "$out" || true
    for v in "${victims[@]}"; do
        check "node lost: the summary names nodeb, role, rank, pid $v, SIGKILL" \
            grep -Eq "^  nodeb +(worker|loader) +[0-9]+ +$v +killed by SIGKILL" "$out"
    done
else
    fail "the node-loss job did not start within 120 s, or ended (see $out)"
    [ -z "${job:-}" ] || on ctl scancel "$job" || true
fi

if [ "$fails" -gt 0 ]; then
    echo "e2e_slurm: $fails check(s) failed" >&2
    exit 1
fi
echo "e2e_slurm: all checks passed"
