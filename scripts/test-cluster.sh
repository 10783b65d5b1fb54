#!/usr/bin/env bash
# test-cluster.sh — a two-node Slurm cluster on this one machine, for tests (issue 18).
#
#   scripts/test-cluster.sh up DIR      start it; DIR (new or empty) holds everything it writes
#   scripts/test-cluster.sh down DIR    stop it and remove its namespaces (DIR stays)
#   scripts/test-cluster.sh run DIR NODE COMMAND...   run COMMAND in NODE's namespace (ctl,
#                                       nodea, nodeb) with SLURM_CONF set: sbatch, squeue, ...
#
# Debian's slurm-wlm 22.05 (slurmctld, slurmd, slurm-client) and munge. Three network
# namespaces on a bridge: ctl (10.203.0.254, the bridge and slurmctld), nodea (10.203.0.1) and
# nodeb (10.203.0.2), each slurmd also in its own UTS namespace with its node's hostname. One
# partition `test` of the two nodes (2 CPUs each, whatever this machine has). munged runs
# with its socket and key in DIR; slurm.conf points there (AuthInfo=socket=...), so a host's
# own munge and Slurm are not touched. Traffic stays inside the namespaces (and loopback).
# `up` waits until both nodes are idle (60 s at most) and writes DIR/env: SLURM_CONF=...,
# NS_CTL=..., NS_A=..., NS_B=..., and DIR/rsh, an `ssh HOST COMMAND` for the two nodes
# (mpirun's plm_rsh_agent). Exit status: 0; 77 where namespaces cannot be made or the
# programs are missing (the reason on stderr); 1 when the cluster does not come up (its logs
# named).
set -euo pipefail

me=test-cluster
die() { echo "$me: $*" >&2; exit 1; }
skip() { echo "$me: $*" >&2; exit 77; }
[ $# -ge 2 ] || { sed -n '4,7p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
cmd=$1 dir=$2
shift 2
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)

load_env() { [ -s "$dir/env" ] || die "$dir/env: no cluster here (run: $0 up $dir)"; . "$dir/env"; }

# COMMAND in network namespace NS. nsenter, not `ip netns exec`: that mounts a new /sys,
# hiding /sys/fs/cgroup, without which slurmd does not start.
in_ns() { local ns=$1; shift; nsenter --net="/run/netns/$ns" "$@"; }

ns_of() {  # NODE -> namespace
    case $1 in ctl) echo "$NS_CTL" ;; nodea) echo "$NS_A" ;; nodeb) echo "$NS_B" ;;
        *) die "$1: not a node of the test cluster (ctl, nodea, nodeb)" ;; esac
}

down() {
    local ns pidf
    if [ -s "$dir/env" ]; then
        . "$dir/env"
        for ns in "$NS_A" "$NS_B" "$NS_CTL"; do
            ip netns pids "$ns" 2> /dev/null | xargs -r kill -TERM 2> /dev/null || true
        done
        for _ in $(seq 30); do
            [ -n "$(ip netns pids "$NS_A" 2> /dev/null)$(ip netns pids "$NS_B" 2> /dev/null)$(ip netns pids "$NS_CTL" 2> /dev/null)" ] || break
            sleep 0.1
        done
        for ns in "$NS_A" "$NS_B" "$NS_CTL"; do
            ip netns pids "$ns" 2> /dev/null | xargs -r kill -KILL 2> /dev/null || true
            ip netns del "$ns" 2> /dev/null || true
        done
    fi
    pidf=$dir/munge/munged.pid
    if [ -s "$pidf" ]; then kill "$(cat "$pidf")" 2> /dev/null || true; fi
    rm -f "$dir/env"
}

up() {
    for p in slurmctld slurmd sbatch sinfo munged mungekey ip unshare nsenter; do
        command -v "$p" > /dev/null || skip "$p not found (bash scripts/setup.sh --test-deps installs slurm-wlm and munge)"
    done
    [ ! -s "$dir/env" ] || die "$dir: a cluster is already up here ($0 down $dir first)"
    local tag=pfs$$ why
    NS_CTL=${tag}_ctl NS_A=${tag}_a NS_B=${tag}_b
    why=$(ip netns add "$NS_CTL" 2>&1) || skip "cannot create a network namespace (ip netns add: $why): needs root or CAP_NET_ADMIN + CAP_SYS_ADMIN"
    # DIR/env first: `down` finds whatever was made from here on, whatever fails
    printf 'SLURM_CONF=%s\nNS_CTL=%s\nNS_A=%s\nNS_B=%s\nexport SLURM_CONF\n' "$dir/slurm.conf" \
        "$NS_CTL" "$NS_A" "$NS_B" > "$dir/env"
    trap 'down; exit 1' ERR
    ip netns add "$NS_A"
    ip netns add "$NS_B"
    # the bridge in ctl, one veth pair per node
    ip -n "$NS_CTL" link add br0 type bridge
    ip -n "$NS_CTL" addr add 10.203.0.254/24 dev br0
    ip -n "$NS_CTL" link set br0 up
    ip -n "$NS_CTL" link set lo up
    local n=1 ns
    for ns in "$NS_A" "$NS_B"; do
        why=$(ip link add "${tag}n$n" type veth peer name "${tag}b$n" 2>&1) ||
            { down; skip "ip link add ... type veth failed: $why"; }
        ip link set "${tag}n$n" netns "$ns"
        ip link set "${tag}b$n" netns "$NS_CTL"
        ip -n "$NS_CTL" link set "${tag}b$n" master br0
        ip -n "$NS_CTL" link set "${tag}b$n" up
        ip -n "$ns" link set lo up
        ip -n "$ns" addr add "10.203.0.$n/24" dev "${tag}n$n"
        ip -n "$ns" link set "${tag}n$n" up
        n=$((n + 1))
    done
    # munge, private to this cluster
    mkdir -p "$dir/munge" "$dir/state" "$dir/spool"
    chmod 700 "$dir/munge"
    mungekey --create --keyfile="$dir/munge/munge.key" > /dev/null 2>&1 ||
        { down; die "mungekey --create failed"; }
    munged --socket="$dir/munge/munge.socket" --key-file="$dir/munge/munge.key" \
        --pid-file="$dir/munge/munged.pid" --log-file="$dir/munge/munged.log" \
        --seed-file="$dir/munge/munged.seed" --force > "$dir/munge/start.out" 2>&1 ||
        { down; die "munged did not start: $(cat "$dir/munge/start.out")"; }
    local cpus
    cpus=$(nproc)
    cat > "$dir/slurm.conf" << EOF
# written by scripts/test-cluster.sh: a two-node test cluster in network namespaces
ClusterName=pixflowtest
SlurmctldHost=ctl(10.203.0.254)
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munge.socket
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/%n
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.%n.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.%n.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
SlurmdParameters=config_overrides
KillWait=15
NodeName=nodea NodeAddr=10.203.0.1 CPUs=$cpus State=UNKNOWN
NodeName=nodeb NodeAddr=10.203.0.2 CPUs=$cpus State=UNKNOWN
PartitionName=test Nodes=nodea,nodeb Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE
EOF
    # DIR/rsh HOST COMMAND...: as `ssh HOST COMMAND`, into a node's namespaces (nodea, nodeb;
    # a new UTS namespace with the node's hostname): OpenMPI's plm_rsh_agent for mpirun across
    # the two nodes (tests/e2e_mpi.sh), or launch.sh's --rsh.
    cat > "$dir/rsh" << EOF
#!/bin/sh
# written by scripts/test-cluster.sh: rsh HOST COMMAND... into a test node
host=\$1
shift
case \$host in
    nodea) ns=$NS_A ;;
    nodeb) ns=$NS_B ;;
    *) echo "rsh: \$host: host unreachable (the test nodes: nodea, nodeb)" >&2; exit 255 ;;
esac
exec nsenter --net=/run/netns/\$ns unshare --uts sh -c 'hostname "\$1" && exec sh -c "\$2"' sh "\$host" "\$*"
EOF
    chmod +x "$dir/rsh"
    # No cgroup enforcement (proctrack/linuxproc, task/none), but slurmd loads its cgroup
    # plugin anyway: on a cgroup v2 host without systemd's D-Bus (a container, a chroot) it
    # must not ask systemd for a scope. (Tested on a cgroup v1 host.)
    printf 'CgroupPlugin=autodetect\nIgnoreSystemd=yes\n' > "$dir/cgroup.conf"
    export SLURM_CONF=$dir/slurm.conf
    in_ns "$NS_CTL" unshare --uts sh -c 'hostname ctl && exec slurmctld -D -i' \
        > "$dir/slurmctld.out" 2>&1 &
    for node in nodea nodeb; do
        ns=$(ns_of "$node")
        in_ns "$ns" unshare --uts sh -c "hostname $node && exec slurmd -D -N $node" \
            > "$dir/slurmd.$node.out" 2>&1 &
    done
    local end=$((SECONDS + 60)) states=""
    while [ "$SECONDS" -lt "$end" ]; do
        states=$(in_ns "$NS_CTL" sinfo -h -N -o '%N %t' 2> /dev/null | sort -u | tr '\n' ' ') ||
            states=""
        [ "$states" != "nodea idle nodeb idle " ] || { trap - ERR; echo "$me: up in $dir (nodes: $states)"; return 0; }
        sleep 0.5
    done
    echo "$me: the nodes are not idle after 60 s (sinfo: ${states:-no answer}); logs:" >&2
    tail -n 5 "$dir"/slurmctld.log "$dir"/slurmd.*.log "$dir"/*.out >&2 2> /dev/null || true
    down
    exit 1
}

case $cmd in
    up) up ;;
    down) down ;;
    run)
        load_env
        [ $# -ge 2 ] || die "run DIR NODE COMMAND..."
        ns=$(ns_of "$1")
        shift
        SLURM_CONF=$SLURM_CONF exec nsenter --net="/run/netns/$ns" "$@" ;;
    *) die "$cmd: expected up, down or run" ;;
esac
