#!/usr/bin/env bash
# e2e_launch — scripts/launch.sh across two "hosts": Linux network namespaces A (10.202.0.1)
# and B (10.202.0.2) joined by a veth pair, reached through an rsh wrapper that runs
# `ip netns exec NS sh -c 'command'` for hostA and hostB (and fails, as ssh does for a host it
# cannot reach, for hostC).
#
# Hostfile: hostA slots=1 loaders=0 (coordinator, hooks, the worker), hostB slots=0 loaders=2,
# hostC slots=0 loaders=1 (unreachable). Checks:
#   1. the job finishes with exit 0; both of B's loaders served batches (the worker's samples
#      log names each batch's loader); loader 0 killed with SIGKILL mid-run: the coordinator
#      reports it dead, the job goes on and finishes; the launcher's failure summary names it
#      (hostB, loader, 0, its pid, killed by SIGKILL), and hostC's loader (exit 255); every
#      process's output is on the launcher's stdout as `[host role rank] ...` and in its log file;
#      a `pixflow monitor --once` run in B while the job runs lists both loaders alive, and after
#      the kill shows loader 0 dead and loader 1 alive;
#   2. SIGINT to launch.sh: the job checkpoints and stops, exit 130; launch.sh killed with
#      SIGKILL: every process it started on A and B ends within 10 s, the coordinator (SIGINT
#      from its watchdog) having checkpointed;
#   3. CURVE (`security: {curve: true}`, keys from `pixflow keygen`, `launch.sh --keys`): while
#      the job runs, two intruder loaders from B, one with the job's server key but a client key
#      not in allowed/ and one without keys, each exit 1 within 10 s saying why; the
#      coordinator's log names the refused key, and the peers without keys, with B's address
#      (10.202.0.2); a monitor in B with --keys lists both loaders alive, one without keys is
#      refused (exit non-zero, says it has no keys); the job finishes with exit 0, every
#      iteration once, with the batches of run 1 (iteration, epoch, sample ids, pixel digest),
#      served by B's two loaders only.
# Needs root (`ip netns`); without it, says why and exits 77 (ctest: skipped). Namespaces and
# their processes go at exit, on SIGINT/SIGTERM/SIGHUP, and (left by a killed run) at the start.
set -euo pipefail
unset PIXFLOW_KEYS  # runs 1 and 2 run without CURVE; run 3 passes its keys itself

src=${PF_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
launch=$src/scripts/launch.sh
prefix=pfl_
ns_a=${prefix}$$_a ns_b=${prefix}$$_b
veth_a=pla$$ veth_b=plb$$
root=$(mktemp -d /tmp/pixflow_e2e_launch.XXXXXX)
# shellcheck source=tests/lib_e2e.sh
. "$src/tests/lib_e2e.sh"  # write_config, wait_for, lines, fail, check, batches, losses, ...

remove_ns() {
    ip netns pids "$1" 2> /dev/null | xargs -r kill -9 2> /dev/null || true
    for _ in $(seq 50); do [ -n "$(ip netns pids "$1" 2> /dev/null)" ] || break; sleep 0.1; done
    ip netns del "$1" 2> /dev/null || true
}
launcher_pid=""
cleanup() {
    [ -z "$launcher_pid" ] || kill -KILL "$launcher_pid" 2> /dev/null || true
    remove_ns "$ns_a"
    remove_ns "$ns_b"
    if [ "$fails" = 0 ]; then rm -rf "$root"; else echo "kept $root for a look" >&2; fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

# Namespaces whose test run is gone: left by a run that was killed before its cleanup.
for ns in $(ip netns list 2> /dev/null | awk '{ print $1 }' | grep "^$prefix" || true); do
    pid=${ns#"$prefix"}
    pid=${pid%_*}
    if ! kill -0 "$pid" 2> /dev/null; then
        echo "removing namespace $ns left by an earlier run"
        remove_ns "$ns"
    fi
done

if ! why=$(ip netns add "$ns_a" 2>&1); then
    echo "SKIP: cannot create a network namespace (\`ip netns add\`: ${why:-failed}): this test" \
         "needs root or CAP_NET_ADMIN + CAP_SYS_ADMIN and iproute2"
    exit 77
fi
ip netns add "$ns_b"
if ! why=$(ip link add "$veth_a" type veth peer name "$veth_b" 2>&1); then
    echo "SKIP: \`ip link add ... type veth\` failed: $why"
    exit 77
fi
ip link set "$veth_a" netns "$ns_a"
ip link set "$veth_b" netns "$ns_b"
ip -n "$ns_a" addr add 10.202.0.1/24 dev "$veth_a"
ip -n "$ns_b" addr add 10.202.0.2/24 dev "$veth_b"
for ns in "$ns_a" "$ns_b"; do
    ip -n "$ns" link set lo up
done
ip -n "$ns_a" link set "$veth_a" up
ip -n "$ns_b" link set "$veth_b" up

# The rsh wrapper: `rsh HOST 'command'`, as `ssh HOST 'command'`.
cat > "$root/rsh" << EOF
#!/bin/sh
case \$1 in
    hostA) ns=$ns_a ;;
    hostB) ns=$ns_b ;;
    *) echo "rsh: \$1: host unreachable" >&2; exit 255 ;;
esac
exec ip netns exec "\$ns" sh -c "\$2"
EOF
chmod +x "$root/rsh"
printf '# test hosts\nhostA slots=1 loaders=0\n\nhostB slots=0 loaders=2  # two loaders\nhostC slots=0 loaders=1\n' \
    > "$root/hosts"
mkdir -p "$root/train"
cp "$data"/jpeg/{gray,photo,progressive,s444}.png "$root/train/"
export OMP_NUM_THREADS=1
run_launch() {  # OUT CONFIG [LAUNCH ARGS]: in the background, launcher_pid set
    # As a job of its own (set -m): a background command of a non-interactive shell would
    # start with SIGINT ignored, and a shell cannot trap a signal ignored at its start.
    set -m
    "$launch" --hostfile "$root/hosts" --bind-addr 10.202.0.1 --port 7300 --rsh "$root/rsh" \
        --pixflow "$bin" "${@:3}" "$2" > "$1" 2>&1 &
    launcher_pid=$!
    set +m
}
# `pixflow monitor --once` from host B (namespace B), joining the running job late: its view
# into FILE.
monitor_once() {  # FILE [MONITOR ARGS]
    ip netns exec "$ns_b" "$bin" monitor --connect tcp://10.202.0.1:7300 --once "${@:2}" > "$1" 2>&1
}
# The monitor's row of loader NAME shows STATE (alive / dead).
loader_row() {  # FILE NAME STATE
    grep -Eq "^  $2 +[^ ]+ +[0-9]+ $3 " "$1"
}

# ---- 1. a job across A and B; a loader killed mid-run -------------------------------------------
# ~200 iterations/s on one core: a run of about 30 s, the loader killed after 1000.
wd=$root/work1 out=$root/launch1.out iters=6000
write_config "$root/one.yaml" "$wd" "$iters"
run_launch "$out" "$root/one.yaml"
samples=$wd/samples_rank0.log
if ! wait_for 120 lines "$samples" 1000; then
    fail "the job did not reach iteration 1000 within 120 s (see $out)"
    exit 1
fi
check "both of B's loaders served batches before the kill" \
    test "$(grep -o 'loader=[0-9]*' "$samples" | sort -u | wc -l)" -ge 2
tsv=$wd/launch/procs.tsv
wait_for 30 test -e "$tsv" || true
loader_pid=$(awk -F'\t' '$2 == "hostB" && $3 == "loader" && $4 == "0" { print $5 }' "$tsv")
check "procs.tsv names loader 0 on hostB with a pid" test -n "$loader_pid"
check "that pid runs in namespace B" grep -qx "$loader_pid" <(ip netns pids "$ns_b")
mon1=$root/monitor1.txt mon2=$root/monitor2.txt
check "a monitor in B joins the running job (--once, exit 0; $mon1)" monitor_once "$mon1"
check "the monitor lists both of B's loaders alive" \
    grep -q "^loaders  2 (2 alive)" "$mon1"
check "the monitor's loader0@hostB row is alive with the pid procs.tsv names" \
    grep -Eq "^  loader0@hostB +[^ ]+ +$loader_pid alive " "$mon1"
check "the monitor's loader1@hostB row is alive" loader_row "$mon1" loader1@hostB alive
check "the monitor shows the worker on A (device cpu)" grep -q "device cpu" "$mon1"
n_before=$(wc -l < "$samples")
kill -KILL "$loader_pid"
check "the coordinator reports the killed loader dead" wait_for 20 grep -q \
    "loader loader0@hostB (pid $loader_pid on .*) sent no heartbeat" "$wd/coordinator.log"
# shellcheck disable=SC2016  # expanded by eval
check "the monitor then shows loader0@hostB dead, loader1@hostB alive ($mon2)" \
    eval 'monitor_once "$mon2" && loader_row "$mon2" loader0@hostB dead &&
          loader_row "$mon2" loader1@hostB alive && grep -q "^loaders  2 (1 alive)" "$mon2"'
st=0
wait "$launcher_pid" || st=$?
launcher_pid=""
check "the job finished with exit 0 (status $st; $out)" test "$st" = 0
check "the worker went on after the kill ($n_before -> $(wc -l < "$samples") of $iters batches)" \
    test "$(wc -l < "$samples")" = "$iters"
check "batches after the kill all came from loader 1" \
    test "$(tail -n +$((n_before + 40)) "$samples" | grep -o 'loader=[0-9]*' | sort -u | wc -l)" = 1
check "the failure summary names hostB loader 0, its pid, SIGKILL" \
    grep -Eq "^  hostB +loader +0 +$loader_pid +killed by SIGKILL" "$out"
check "the failure summary names hostC's loader (rsh failed)" \
    grep -Eq "^  hostC +loader +2 +- +exit 255" "$out"
check "output is prefixed [host role rank]" \
    grep -q "^\[hostA coordinator 0\] .*all roles present" "$out"
check "B's loaders' output is prefixed" grep -q "^\[hostB loader 1\] .*joined tcp://10.202.0.1:7300" "$out"
check "each process has its log file" test -s "$wd/launch/hostB.loader.1.log" -a \
    -s "$wd/launch/hostA.worker.0.log" -a -s "$wd/launch/hostA.checkpoint.0.log"
check "the worker's data endpoint is on A's address" \
    grep -q "data endpoint tcp://10.202.0.1:" "$wd/launch/hostA.worker.0.log"

# ---- 2. SIGINT: checkpoint and stop, exit 130 ----------------------------------------------------
wd=$root/work2 out=$root/launch2.out
write_config "$root/two.yaml" "$wd" 100000
run_launch "$out" "$root/two.yaml"
if wait_for 120 lines "$wd/samples_rank0.log" 30; then
    kill -INT "$launcher_pid"
    st=0
    wait "$launcher_pid" || st=$?
    launcher_pid=""
    check "SIGINT: exit 130 (status $st; $out)" test "$st" = 130
    check "SIGINT: a checkpoint was written" test -e "$wd/checkpoints/latest"
    check "SIGINT: the launcher said it forwarded the interrupt" \
        grep -q "interrupted: the coordinator checkpoints" "$out"
else
    fail "second job did not start within 120 s (see $out)"
fi

# ---- 2b. the launcher killed with SIGKILL: every process it started, on A and B, ends ----------
wd=$root/work2b out=$root/launch2b.out
write_config "$root/twob.yaml" "$wd" 100000 100000  # no periodic checkpoint
run_launch "$out" "$root/twob.yaml"
tsv=$wd/launch/procs.tsv
if wait_for 120 lines "$wd/samples_rank0.log" 30 && wait_for 30 test -s "$tsv"; then
    mapfile -t pids < <(awk -F'\t' 'NR > 1 && $5 != "" { print $5 }' "$tsv")
    check "procs.tsv lists the coordinator, 3 hooks, the worker and B's 2 loaders" \
        test "${#pids[@]}" = 7
    sigkill_launcher "launcher SIGKILL" "$launcher_pid" "${pids[@]}"
    launcher_pid=""
    ns_empty() { [ -z "$(ip netns pids "$ns_a")$(ip netns pids "$ns_b")" ]; }
    st=0
    wait_for $((t_kill + 10 - SECONDS)) ns_empty || st=1
    check "launcher SIGKILL: nothing left in namespaces A and B 10 s after the kill (their shells and watchdogs too)" \
        test "$st" = 0
    check "launcher SIGKILL: the coordinator checkpointed on its way out" \
        test -e "$wd/checkpoints/latest"
    check "launcher SIGKILL: the coordinator said it was interrupted" \
        grep -q "signal 2\|interrupt" "$wd/launch/hostA.coordinator.0.log"
    for p in "${pids[@]}"; do kill -KILL "$p" 2> /dev/null || true; done
else
    fail "the launcher-SIGKILL job did not start within 120 s (see $out)"
fi

# ---- 3. CURVE: intruders from B are refused, the job is not disturbed ---------------------------
keys=$root/keys other=$root/other_keys
"$bin" keygen "$keys" > "$root/keygen.out" 2>&1
# The intruder's folder: the job's server public key, a client pair of its own not in allowed/.
"$bin" keygen "$other" --name client >> "$root/keygen.out" 2>&1
cp "$keys/server" "$other/server"
wd=$root/work3 out=$root/launch3.out iters3=3000
write_config "$root/three.yaml" "$wd" "$iters3"
echo "security: {curve: true}" >> "$root/three.yaml"
run_launch "$out" "$root/three.yaml" --keys "$keys"
# A command in B: its output into FILE, "STATUS MILLISECONDS" into FILE.st.
in_b_timed() {  # FILE COMMAND...
    local f=$1 t0 st=0
    shift
    t0=$(date +%s%N)
    ip netns exec "$ns_b" timeout 30 "$@" > "$f" 2>&1 || st=$?
    echo "$st $((($(date +%s%N) - t0) / 1000000))" > "$f.st"
}
# An intruder in FILE exited 1 within 10 s saying WHY.
refused_fast() {  # FILE WHY
    local st ms
    read -r st ms < "$1.st"
    echo "   ($1: exit $st after $ms ms)"
    [ "$st" = 1 ] && [ "$ms" -lt 10000 ] && grep -q "$2" "$1"
}
samples=$wd/samples_rank0.log
if wait_for 120 lines "$samples" 100; then
    ep=tcp://10.202.0.1:7300
    in_b_timed "$root/intruder.out" "$bin" loader --connect "$ep" --keys "$other" \
        --name intruder &
    i1=$!
    in_b_timed "$root/nokeys.out" "$bin" loader --connect "$ep" --name nokeys &
    i2=$!
    mon3=$root/monitor3.txt mon4=$root/monitor4.txt
    check "CURVE: a monitor in B with --keys joins ($mon3)" monitor_once "$mon3" --keys "$keys"
    check "CURVE: the monitor lists both of B's loaders alive" \
        grep -q "^loaders  2 (2 alive)" "$mon3"
    st=0
    monitor_once "$mon4" || st=$?
    check "CURVE: a monitor without keys is refused (exit $st; $mon4)" \
        test "$st" != 0 -a -n "$(grep "this process has no keys" "$mon4")"
    wait "$i1" "$i2" || true
    check "CURVE: a loader with a key not in allowed/: exit 1 within 10 s, could not authenticate" \
        refused_fast "$root/intruder.out" "could not authenticate"
    check "CURVE: the loader without keys exits 1 within 10 s, says it has no keys" \
        refused_fast "$root/nokeys.out" "this process has no keys"
    clog=$wd/coordinator.log
    from_b="refused a connection from 10\.202\.0\.2:[0-9]+ on ctrl:"
    check "CURVE: the coordinator names the refused key with B's address" \
        wait_for 5 grep -Eq "refused a connection from 10\.202\.0\.2: public key not in the allowed" "$clog"
    # Without keys (the loader and the monitor, each retrying): a mechanism mismatch, or a
    # handshake broken off when the client noticed first.
    check "CURVE: ... and the refused peers without keys with B's address" wait_for 5 grep -Eq \
        "$from_b (it does not use CURVE|CURVE handshake broken off)" "$clog"
    st=0
    wait "$launcher_pid" || st=$?
    launcher_pid=""
    check "CURVE: the job finished with exit 0 (status $st; $out)" test "$st" = 0
    check "CURVE: the launcher's monitor hint has --keys" \
        grep -q "pixflow monitor --connect $ep --keys '$keys'" "$out"
    check "CURVE: every iteration once ($(wc -l < "$samples") of $iters3 lines)" \
        cmp -s <(awk '{ print $1 }' "$samples" | sort -n) <(seq 0 $((iters3 - 1)))
    check "CURVE: the batches of run 1 (iteration, epoch, sample ids, digest)" \
        cmp -s <(cut -d' ' -f1,2,4,5 "$samples" | sort -n) \
        <(head -n "$iters3" "$root/work1/samples_rank0.log" | cut -d' ' -f1,2,4,5)
    check "CURVE: served by B's two loaders, no intruder" \
        test "$(grep -o 'loader=[0-9]*' "$samples" | sort -u | wc -l)" = 2
else
    fail "the CURVE job did not reach iteration 100 within 120 s (see $out)"
fi

[ "$fails" = 0 ] || { echo "$fails check(s) failed" >&2; exit 1; }
echo "e2e_launch: all checks passed"
