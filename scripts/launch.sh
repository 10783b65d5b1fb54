#!/usr/bin/env bash
# launch.sh — start one PixFlow training job on several hosts (docs/architecture.md, "Several
# hosts").
#
#   scripts/launch.sh [--hostfile FILE] [--gpus N] [--loaders-per-host N] [--bind-addr ADDR]
#                     [--port P] [--rsh CMD] [--pixflow PATH] [--log-dir DIR] [--keys DIR]
#                     [--dry-run] CONFIG [-- ARGS]
#
# --dry-run prints each process (host, role, rank, environment, command) and starts nothing.
# --gpus N (Slurm: --gpus-per-node): N workers per host, one GPU each, CUDA_VISIBLE_DEVICES the
# i-th entry of the host's own list (Slurm sets it in a job step), else i; each sees cuda:0.
#
# Where the hosts come from, first match wins:
#   --hostfile FILE   lines `HOST slots=N [loaders=M] [addr=A]` (as DeepSpeed/MPI hostfiles; `#`
#                     comments, blank lines); slots = workers on that host (GPUs with --gpus,
#                     else CPU workers), loaders = loader processes (default --loaders-per-host),
#                     addr = the address other hosts reach it by (default: found on the host).
#   Slurm             SLURM_JOB_NODELIST (expanded by `scontrol show hostnames`); slots per node
#                     from --gpus, SLURM_GPUS_ON_NODE, else SLURM_NTASKS_PER_NODE, else 1.
#                     Processes start as job steps (`srun --overlap --nodelist=HOST`) unless
#                     --rsh is given; scripts/pixflow.sbatch is the batch script.
#   mpirun            OMPI_COMM_WORLD_RANK/SIZE/LOCAL_RANK: mpirun runs this script once per node
#                     (`mpirun --map-by ppr:1:node`), each copy starts its own node's share
#                     locally (no ssh); rank 0 also runs the coordinator and the hooks.
#                     --bind-addr is then required: rank 0's address, the same on every rank.
#   otherwise         this host alone.
# The first host runs the coordinator and the checkpoint, eval and log hooks, plus its workers
# and loaders; the others run workers and loaders. Commands reach a host as `RSH HOST 'command'`
# (RSH default `ssh -o BatchMode=yes`); they cd to this directory and run PIXFLOW (default: this
# script's build/pixflow, by the same absolute path), so every host needs the same paths (a shared
# file system, as for MPI jobs).
#
# CURVE (the config's `security: {curve: true}`): the key folder (`pixflow keygen DIR`) is
# --keys DIR, else $PIXFLOW_KEYS, else the config's security.keys_dir, as for the coordinator;
# every process gets it as `--keys DIR`, so DIR must exist by that path on every host (connecting
# hosts need server, client, client_secret; hosts with workers also server_secret, allowed/).
# Without security.curve no process gets keys (PIXFLOW_KEYS is cleared), as with `pixflow train`.
#
# Every process's output goes to the launcher's stdout as `[host role rank] line` and to
# LOG_DIR/HOST.ROLE.RANK.log; LOG_DIR/procs.tsv (under mpirun procs.rankN.tsv per launcher)
# lists them with their pids. SIGINT/SIGTERM:
# SIGINT to the coordinator, which has the workers checkpoint and stop (exit 130); if the job is
# not gone within 40 s (or at a second signal) everything is terminated, then killed. When a
# process ends other than cleanly (status 0, or 130 after an interrupt), a summary names its host,
# role, rank, pid, status and last lines. Exit status: the coordinator's (1 when it did not run).
# If the launcher itself dies, SIGKILL included, every process it started follows within 10 s:
# each runs beside a watchdog whose stdin is a pipe only the launcher holds open (through ssh
# too); at its end of file the coordinator gets SIGINT (checkpoint and stop) and the others
# 7 s to end with it, then SIGTERM, then SIGKILL (tests/e2e_launch.sh, part 2b).
# `A && B || die ...`: die and continue cannot fail, so these read as if-then-else.
# shellcheck disable=SC2015
set -euo pipefail

readonly STOP_GRACE_S=40   # coordinator: 8 s for workers, 4 s for hooks, checkpoint write
readonly EXIT_GRACE_S=15   # the others, once the coordinator has exited
readonly READY_TIMEOUT_S=60
readonly WATCHDOG_GRACE_S=7  # launcher gone: the processes' own stop, then SIGTERM, SIGKILL

me=launch
die() { echo "$me: $*" >&2; exit 2; }
say() { echo "$me: $*" >&2; }
usage() { sed -n '4,7p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
# Single-quote a word for a POSIX shell.
q() { local s=${1//\'/\'\\\'\'}; printf "'%s'" "$s"; }

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
hostfile="" gpus="" loaders_per_host=1 bind_addr="" port=29500 rsh="ssh -o BatchMode=yes"
pixflow="${script_dir%/scripts}/build/pixflow" log_dir="" config="" extra=() keys=""
keys_given=0 rsh_given=0 dry_run=0
while [ $# -gt 0 ]; do
    case $1 in
        --hostfile) hostfile=${2:?--hostfile needs a file}; shift 2 ;;
        --gpus) gpus=${2:?--gpus needs a number}; shift 2 ;;
        --loaders-per-host) loaders_per_host=${2:?--loaders-per-host needs a number}; shift 2 ;;
        --bind-addr) bind_addr=${2:?--bind-addr needs an address}; shift 2 ;;
        --port) port=${2:?--port needs a number}; shift 2 ;;
        --rsh) rsh=${2:?--rsh needs a command}; rsh_given=1; shift 2 ;;
        --pixflow) pixflow=${2:?--pixflow needs a path}; shift 2 ;;
        --log-dir) log_dir=${2:?--log-dir needs a folder}; shift 2 ;;
        --keys) keys=${2:?--keys needs a folder}; keys_given=1; shift 2 ;;
        --dry-run) dry_run=1; shift ;;
        -h|--help) usage ;;
        --) shift; extra=("$@"); break ;;
        -*) die "unknown option '$1' (see --help)" ;;
        *) [ -z "$config" ] || die "two configs: '$config' and '$1'"; config=$1; shift ;;
    esac
done
[ -n "$config" ] || usage
[ -r "$config" ] || die "$config: cannot read the config"
is_count() { [[ $1 =~ ^[0-9]+$ ]] && [ "$1" -le 256 ]; }
[ -z "$gpus" ] || is_count "$gpus" || die "--gpus $gpus: expected 0..256"
is_count "$loaders_per_host" || die "--loaders-per-host $loaders_per_host: expected 0..256"
[[ $port =~ ^[0-9]+$ ]] && [ "$port" -ge 1 ] && [ "$port" -le 65535 ] ||
    die "--port $port: expected 1..65535"
case $pixflow in /*) ;; *) pixflow="$PWD/$pixflow" ;; esac
read -ra rsh_cmd <<< "$rsh"
[ "${#rsh_cmd[@]}" -gt 0 ] || die "--rsh: empty command"
case $config in /*) ;; *) config="$PWD/$config" ;; esac
workdir_cwd=$PWD

# What the job needs from the config, resolved by PixFlow's own parser (`pixflow config
# --get`, run here): work_dir, the eval hook count, whether a visual hook is needed, and
# security.curve / keys_dir. A bad config stops the launcher here with the parser's message.
mapfile -t cfg_values < <(cd "$workdir_cwd" && "$pixflow" config "$config" --get work_dir \
    evaluation.instances visual_config.interval security.curve security.keys_dir 2>&1;
    echo "status $?")
[ "${cfg_values[-1]:-}" = "status 0" ] && [ "${#cfg_values[@]}" = 6 ] ||
    die "$(printf '%s\n' "${cfg_values[@]}" | grep -v '^status ' | tail -n 3)"
work_dir=${cfg_values[0]} eval_instances=${cfg_values[1]} visual_interval=${cfg_values[2]}
curve=${cfg_values[3]} cfg_keys=${cfg_values[4]}
case $curve in
    true|True|TRUE)
        if [ -z "$keys" ]; then
            [ -n "$cfg_keys" ] ||
                die "$config: security.curve is true but there is no key folder:" \
                    "pass --keys DIR, set PIXFLOW_KEYS or security.keys_dir (\`pixflow keygen DIR\`)"
            keys=$cfg_keys
        fi
        case $keys in /*) ;; *) keys="$PWD/$keys" ;; esac
        [ -d "$keys" ] ||
            die "--keys $keys: no such folder (make it with \`pixflow keygen DIR\`)" ;;
    *)
        [ "$keys_given" = 0 ] || say "--keys $keys: ignored, security.curve is not true in $config"
        keys="" ;;
esac
if [ -z "$log_dir" ]; then
    if [ -n "$work_dir" ]; then log_dir="$work_dir/launch"; else log_dir=./launch_logs; fi
fi

# ---- hosts: host_name[i], host_slots[i], host_loaders[i], host_addr[i] --------------------
host_name=() host_slots=() host_loaders=() host_addr=()
mode=local mpi_rank=0 use_srun=0
add_host() { host_name+=("$1"); host_slots+=("$2"); host_loaders+=("$3"); host_addr+=("$4"); }
if [ -n "$hostfile" ]; then
    mode=rsh
    [ -r "$hostfile" ] || die "$hostfile: cannot read the hostfile"
    lineno=0
    while IFS= read -r line || [ -n "$line" ]; do
        lineno=$((lineno + 1))
        line=${line%%#*}
        read -ra words <<< "$line"
        [ "${#words[@]}" -gt 0 ] || continue
        h=${words[0]} s="" l=$loaders_per_host a=""
        [[ $h =~ ^[A-Za-z0-9._@-]+$ && $h != -* ]] ||
            die "$hostfile:$lineno: '$h' is not a host name"
        for w in "${words[@]:1}"; do
            case $w in
                slots=*) s=${w#slots=}; is_count "$s" ||
                    die "$hostfile:$lineno: $w: expected slots=N, N in 0..256" ;;
                loaders=*) l=${w#loaders=}; is_count "$l" ||
                    die "$hostfile:$lineno: $w: expected loaders=N, N in 0..256" ;;
                addr=*) a=${w#addr=}; [ -n "$a" ] || die "$hostfile:$lineno: empty addr=" ;;
                *) die "$hostfile:$lineno: '$w': expected slots=N, loaders=N or addr=ADDR" ;;
            esac
        done
        [ -n "$s" ] || die "$hostfile:$lineno: host $h has no slots=N"
        add_host "$h" "$s" "$l" "$a"
    done < "$hostfile"
    [ "${#host_name[@]}" -gt 0 ] || die "$hostfile: no hosts in it"
elif [ -n "${SLURM_JOB_NODELIST:-}" ]; then
    mode=rsh
    # Inside the allocation each process starts as a job step on its node (no ssh).
    [ "$rsh_given" = 1 ] || use_srun=1
    if command -v scontrol > /dev/null; then
        mapfile -t nodes < <(scontrol show hostnames "$SLURM_JOB_NODELIST" 2> /dev/null)
        [ "${#nodes[@]}" -gt 0 ] ||
            die "SLURM_JOB_NODELIST=$SLURM_JOB_NODELIST: \`scontrol show hostnames\` failed" \
                "(no Slurm configuration here?)"
    else
        [[ $SLURM_JOB_NODELIST != *[\[]* ]] ||
            die "SLURM_JOB_NODELIST=$SLURM_JOB_NODELIST needs \`scontrol show hostnames\`, not found"
        IFS=, read -ra nodes <<< "$SLURM_JOB_NODELIST"
    fi
    # GPUs: --gpus, else what Slurm gave each node (--gpus-per-node: "2" or "a100:2")
    [ -n "$gpus" ] || { g=${SLURM_GPUS_ON_NODE:-${SLURM_GPUS_PER_NODE:-}}; gpus=${g##*:}; }
    [ -z "$gpus" ] || is_count "$gpus" || die "Slurm's GPUs per node '$gpus': expected 0..256"
    s=${gpus:-${SLURM_NTASKS_PER_NODE:-1}}
    [ "$s" != 0 ] || s=${SLURM_NTASKS_PER_NODE:-1}
    s=${s%%(*}  # SLURM_NTASKS_PER_NODE may read "2(x3)"
    for h in "${nodes[@]}"; do add_host "$h" "$s" "$loaders_per_host" ""; done
elif [ -n "${OMPI_COMM_WORLD_RANK:-}" ]; then
    mode=mpi
    mpi_rank=$OMPI_COMM_WORLD_RANK
    mpi_size=${OMPI_COMM_WORLD_SIZE:?OMPI_COMM_WORLD_SIZE not set}
    [ "${OMPI_COMM_WORLD_LOCAL_RANK:-0}" = 0 ] && [ "${OMPI_COMM_WORLD_LOCAL_SIZE:-1}" = 1 ] ||
        die "mpirun: one copy of this script per node, please (mpirun --map-by ppr:1:node);" \
            "rank $mpi_rank is local rank ${OMPI_COMM_WORLD_LOCAL_RANK:-0}"
    [ -n "$bind_addr" ] || [ "$mpi_size" = 1 ] ||
        die "mpirun: --bind-addr ADDR (rank 0's address, the same on every rank) is required"
    s=${gpus:-1}
    for ((r = 0; r < mpi_size; r++)); do add_host "$(hostname)" "$s" "$loaders_per_host" ""; done
else
    add_host "$(hostname)" "${gpus:-1}" "$loaders_per_host" ""
fi
n_hosts=${#host_name[@]}
workers=0
for s in "${host_slots[@]}"; do workers=$((workers + s)); done
[ "$workers" -ge 1 ] && [ "$workers" -le 64 ] || die "$workers worker slots in all: expected 1..64"

if [ -z "$bind_addr" ]; then
    bind_addr=${host_addr[0]}
    if [ -z "$bind_addr" ] && [ "$mode" != rsh ]; then bind_addr=127.0.0.1; fi
    if [ -z "$bind_addr" ]; then
        bind_addr=$(getent ahostsv4 "${host_name[0]}" | awk 'NR == 1 { print $1 }') || true
        # The first host is this one (a Slurm batch script) but its name does not resolve, or
        # resolves to loopback (Debian's 127.0.1.1): its first address.
        if { [ -z "$bind_addr" ] || [[ $bind_addr == 127.* ]]; } && [ "$n_hosts" -gt 1 ] &&
           [ "${host_name[0]}" = "$(hostname)" ]; then
            bind_addr=$(hostname -I 2> /dev/null | awk '{ print $1 }') || true
        fi
        [ -n "$bind_addr" ] || die "cannot resolve ${host_name[0]} (the first host); give --bind-addr"
        if [[ $bind_addr == 127.* ]] && [ "$n_hosts" -gt 1 ]; then
            die "${host_name[0]} resolves to $bind_addr, which the other hosts cannot reach;" \
                "give --bind-addr or addr= in the hostfile"
        fi
    fi
fi
[[ $bind_addr =~ ^[A-Za-z0-9._:-]+$ && $bind_addr != -* ]] ||
    die "--bind-addr '$bind_addr': expected an IP address or host name"
endpoint="tcp://$bind_addr:$port"

# ---- processes: p_host, p_role, p_rank, p_cmd (remote shell script), p_local -----------------
p_host=() p_hostidx=() p_role=() p_rank=() p_cmd=() p_show=() gpu_pre=""
env_common="OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}"
[ -z "${PIXFLOW_LOG_STDERR:-}" ] || env_common+=" PIXFLOW_LOG_STDERR=$(q "$PIXFLOW_LOG_STDERR")"
# Keys travel as --keys (ssh does not pass the environment); an inherited PIXFLOW_KEYS must not
# turn CURVE on for the peers of a job without it.
env_common+=" PIXFLOW_KEYS="
one_thread="OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}"
# add_proc HOSTIDX ROLE RANK 'ENV' ARGS...: one process; its shell script prints its pid, then
# its exit status, as marker lines the launcher reads.
add_proc() {
    local hi=$1 role=$2 rank=$3 env=$4 args="" a
    shift 4
    [ -z "$keys" ] || set -- "$@" --keys "$keys"
    for a in "$@"; do args+=" $(q "$a")"; done
    local gp=$gpu_pre pre=$gpu_pre  # a GPU worker's device pick (the GPU loop sets it)
    gpu_pre=""
    # A worker binds its data endpoint (and Gloo) on the address loaders reach it by: the first
    # host's is the coordinator's; another host's is addr= or its route to the coordinator.
    if [ "$role" = worker ]; then
        if [ "$hi" = 0 ] || [ -n "${host_addr[$hi]}" ]; then
            local a0=$bind_addr
            [ "$hi" = 0 ] || a0=${host_addr[$hi]}
            pre+="a=$(q "$a0");"
        else
            pre+="a=\$(ip -4 route get $(q "$bind_addr") 2>/dev/null | sed -n 's/.* src \\([0-9.]*\\).*/\\1/p');
[ -n \"\$a\" ] || { echo \"$me: cannot find this host's address towards $bind_addr (ip -4 route get)\"; exit 1; };"
        fi
        args+=" --bind \"tcp://\$a:*\""
    fi
    p_host+=("${host_name[$hi]}") p_hostidx+=("$hi") p_role+=("$role") p_rank+=("$rank")
    p_show+=("${gp:+$gp }$env $(q "$pixflow")$args")
    # The watchdog: stdin is the launcher's liveness pipe (start_proc), which nothing writes;
    # it reads end of file when the launcher is gone, however it died (SIGKILL included; ssh
    # passes the end of file on). The coordinator then gets SIGINT (checkpoint and stop), the
    # others WATCHDOG_GRACE_S to follow it, then SIGTERM, then SIGKILL: all gone within 10 s.
    local first=TERM
    [ "$role" != coordinator ] || first=INT
    # The script outlives the signals a scheduler sends every process of a stopping job (a
    # trap, which its children do not inherit, and `wait` again when a signal interrupts it),
    # so it reports PIXFLOW's own exit status.
    p_cmd+=("exec 2>&1; cd $(q "$workdir_cwd") || exit 126; $pre
trap : INT TERM HUP
exec 3<&0
$env_common $env $(q "$pixflow")$args < /dev/null 3<&- &
p=\$!; echo \"@@pixflow-pid \$p\"
{ while read -r _; do :; done; [ $first = INT ] && kill -INT \$p 2>/dev/null; i=0
  while kill -0 \$p 2>/dev/null && [ \$i -lt $((WATCHDOG_GRACE_S * 10)) ]; do sleep 0.1; i=\$((i + 1)); done
  kill -TERM \$p 2>/dev/null || exit 0; i=0
  while kill -0 \$p 2>/dev/null && [ \$i -lt 10 ]; do sleep 0.1; i=\$((i + 1)); done
  kill -KILL \$p 2>/dev/null; } <&3 > /dev/null 2>&1 &
w=\$!; exec 3<&-
while :; do wait \$p; s=\$?; kill -0 \$p 2>/dev/null || break; done
[ \$s -le 128 ] || { wait \$p; t=\$?; [ \$t = 127 ] || s=\$t; }
kill \$w 2>/dev/null; echo \"@@pixflow-exit \$s\"")
}

hosts_here=()  # the host indices this launcher starts processes on
if [ "$mode" = mpi ]; then hosts_here=("$mpi_rank"); else
    for ((h = 0; h < n_hosts; h++)); do hosts_here+=("$h"); done
fi
worker_rank=0 loader_rank=0
for ((h = 0; h < n_hosts; h++)); do
    mine=0
    for x in "${hosts_here[@]}"; do [ "$x" != "$h" ] || mine=1; done
    if [ "$h" = 0 ] && [ "$mine" = 1 ]; then
        add_proc 0 coordinator 0 "$one_thread" coordinator "$config" --bind "$endpoint" \
            --workers "$workers" "${extra[@]}"
        add_proc 0 checkpoint 0 "$one_thread" hook checkpoint --connect "$endpoint" \
            --bind "tcp://$bind_addr:*"
        add_proc 0 log 0 "$one_thread" hook log --connect "$endpoint"
        if [ "$visual_interval" -gt 0 ]; then
            add_proc 0 visual 0 "$one_thread" hook visual --connect "$endpoint"
        fi
        for ((i = 0; i < eval_instances; i++)); do
            add_proc 0 eval "$i" "$one_thread" hook eval --connect "$endpoint" \
                --instance "$i/$eval_instances"
        done
    fi
    s=${host_slots[$h]}
    for ((i = 0; i < s; i++)); do
        if [ -n "$gpus" ] && [ "$gpus" -gt 0 ]; then
            # One GPU per worker: the i-th of the node's CUDA_VISIBLE_DEVICES (Slurm's, in a
            # job step), else GPU i; the worker sees it as cuda:0.
            dev=cuda:0
            gpu_pre="g=\$(echo \"\${CUDA_VISIBLE_DEVICES:-$(seq -s, 0 $((s - 1)))},\" | cut -d, -f$((i + 1))); [ -n \"\$g\" ] || { echo \"$me: worker $worker_rank: GPU $((i + 1)) of $s wanted, CUDA_VISIBLE_DEVICES=\$CUDA_VISIBLE_DEVICES lists fewer\"; exit 1; };"
            env="CUDA_VISIBLE_DEVICES=\$g"
        else
            dev=cpu env=""
            # CPU workers of one host share its cores.
            [ -n "${OMP_NUM_THREADS:-}" ] || [ "$s" = 1 ] ||
                env="OMP_NUM_THREADS=\$(( (\$(nproc) + $s - 1) / $s ))"
        fi
        [ "$mine" = 0 ] || add_proc "$h" worker "$worker_rank" "$env" worker \
            --connect "$endpoint" --device "$dev"
        worker_rank=$((worker_rank + 1))
    done
    for ((i = 0; i < ${host_loaders[$h]}; i++)); do
        [ "$mine" = 0 ] || add_proc "$h" loader "$loader_rank" "$one_thread" loader \
            --connect "$endpoint" --name "loader$loader_rank@${host_name[$h]}"
        loader_rank=$((loader_rank + 1))
    done
done
n_procs=${#p_role[@]}
if [ "$dry_run" = 1 ]; then
    # What would run where, and how, without starting anything: HOST ROLE RANK ENV COMMAND
    # (the ENV and COMMAND as the remote shell gets them, before its expansion).
    say "dry run: $n_procs process(es), coordinator $endpoint, $workers worker(s)"
    for ((i = 0; i < n_procs; i++)); do
        printf '%s\t%s\t%s\t%s\n' "${p_host[$i]}" "${p_role[$i]}" "${p_rank[$i]}" "${p_show[$i]# }"
    done
    exit 0
fi
[ "$loader_rank" -gt 0 ] ||
    say "no loaders (every host has loaders=0): the job waits for \`pixflow loader --connect $endpoint\`"

mkdir -p "$log_dir" || die "$log_dir: cannot create the log folder"
state=$(mktemp -d "${TMPDIR:-/tmp}/pixflow-launch.XXXXXX")
# The liveness pipe: held open for writing by this shell alone (every child closes it), read by
# each process's watchdog as its stdin (through ssh too): end of file = the launcher is gone.
mkfifo "$state/alive"
exec {alive_fd}<> "$state/alive"
# Under mpirun every rank shares the log folder: each writes its own list.
procs_tsv=$log_dir/procs.tsv
[ "$mode" != mpi ] || procs_tsv=$log_dir/procs.rank$mpi_rank.tsv
rm -f "$procs_tsv"

# ---- start, watch, stop ------------------------------------------------------------------------
p_job=()  # local pid of each process's pipeline
log_of() { echo "$log_dir/${p_host[$1]}.${p_role[$1]}.${p_rank[$1]}.log"; }
# Run a shell command on host index $1 (locally without ssh in local and mpirun modes).
on_host() {
    if [ "$use_srun" = 1 ]; then
        # --overlap: every process is a step of one task sharing the node's allocation;
        # srun forwards stdin (the liveness pipe) to it.
        # --export=ALL: this environment (PATH, modules) even under sbatch --export=NONE.
        srun --nodes=1 --ntasks=1 --overlap --nodelist="${host_name[$1]}" --kill-on-bad-exit=0 \
            --export=ALL --quiet sh -c "$2"
    elif [ "$mode" = rsh ]; then
        # in sh whatever the remote login shell is (ssh hands the command to it)
        "${rsh_cmd[@]}" "${host_name[$1]}" "sh -c $(q "$2")"
    else sh -c "$2"; fi
}
# Read a process's output: marker lines go to STATE.pid/.exit/.rsh (.ready when the
# coordinator listens), the rest to LOG and, prefixed, to stdout. (In bash: mawk, Debian's awk,
# reads pipes in blocks, which would hold lines back.)
read_output() {  # PREFIX LOG STATE
    local line
    while IFS= read -r line; do
        case $line in
            "@@pixflow-pid "*) echo "${line#* }" > "$3.pid" ;;
            "@@pixflow-exit "*) echo "${line#* }" > "$3.exit" ;;
            "@@rsh-exit "*) echo "${line#* }" > "$3.rsh" ;;
            *)
                [[ $line != *" listening on "* ]] || : > "$3.ready"
                printf '%s\n' "$line" >> "$2"
                printf '%s%s\n' "$1" "$line" ;;
        esac
    done
}
start_proc() {
    local i=$1 log
    log=$(log_of "$i")
    : > "$log"
    # Own process group (set -m): the terminal's Ctrl-C reaches the launcher only, which
    # forwards it to the coordinator; stdin is the liveness pipe (read only: ssh does not read
    # the terminal), whose write end the children close.
    # A scheduler that stops the job signals every process of it, these two shells included:
    # they outlive that (a no-op trap resets to the default in ssh/srun; read_output ignores
    # it) to report the process's exit as it checkpoints and stops.
    set -m
    {
        exec {alive_fd}>&-
        trap : INT TERM HUP
        set +e
        on_host "${p_hostidx[$i]}" "${p_cmd[$i]}" < "$state/alive" 2>&1
        echo "@@rsh-exit $?"
    } | {
        exec {alive_fd}>&-
        trap '' INT TERM HUP
        read_output "[${p_host[$i]} ${p_role[$i]} ${p_rank[$i]}] " "$log" "$state/$i"
    } &
    p_job[i]=$!
    set +m
}
# A sleep in the watch loop: a scheduler stopping the job signals this whole process group, and
# a sleep killed so must not end the launcher (set -e) while the job checkpoints.
nap() { sleep "$1" || true; }
# These set REPLY rather than print: no command substitution in the watch loop, where a signal
# trap running while bash 5.2 parses one has been seen to break the parse ("interrupt trap:
# unexpected EOF while looking for matching `)'").
pid_of() { REPLY=""; [ ! -s "$state/$1.pid" ] || read -r REPLY < "$state/$1.pid"; }
ended() { [ -e "$state/$1.rsh" ]; }
# Exit status of process $1: its own, else (never started, ssh failed) the remote shell's.
status_of() {
    if [ -s "$state/$1.exit" ]; then read -r REPLY < "$state/$1.exit"
    else read -r REPLY < "$state/$1.rsh"; fi
}
describe() {  # status [index]
    local st=$1
    if [ -n "${2:-}" ] && [ ! -s "$state/$2.exit" ]; then
        case $st in
            126) echo "exit 126 (cannot cd to $workdir_cwd)" ;;
            127) echo "exit 127 (cannot run: ${rsh_cmd[0]} or the command not found)" ;;
            255) echo "exit 255 (${rsh_cmd[0]} failed: host unreachable?)" ;;
            *) echo "exit $st (before pixflow started)" ;;
        esac
    elif [ "$st" -gt 128 ] && [ "$st" -lt 160 ]; then
        echo "killed by SIG$(kill -l $((st - 128)))"
    else
        echo "exit $st"
    fi
}
signal_proc() {  # index SIGNAL
    pid_of "$1"
    # (not once its exit is known: the pid may be another process's by now)
    [ -n "$REPLY" ] && ! ended "$1" && [ ! -s "$state/$1.exit" ] || return 0
    # without the liveness pipe: an ssh hanging here must not keep the watchdogs waiting
    on_host "${p_hostidx[$1]}" "kill -$2 $REPLY 2>/dev/null" < /dev/null > /dev/null 2>&1 \
        {alive_fd}>&- || true
}
signal_all() {  # in parallel: each may be an ssh round trip
    local i pids=()
    for ((i = 0; i < n_procs; i++)); do signal_proc "$i" "$1" & pids+=($!); done
    for i in "${pids[@]}"; do wait "$i" || true; done
}
running() {  # whether a started process has not ended
    local i
    for ((i = 0; i < n_procs; i++)); do [ -z "${p_job[$i]:-}" ] || ended "$i" || return 0; done
    return 1
}

interrupts=0 stop_at=0 interrupted=0
# shellcheck disable=SC2317  # called by trap
on_signal() { interrupts=$((interrupts + 1)); }
trap on_signal INT TERM HUP
# shellcheck disable=SC2317  # called by trap
cleanup() {
    local i
    for ((i = 0; i < n_procs; i++)); do
        ended "$i" || signal_proc "$i" KILL
        # (KILL: the output readers ignore TERM)
        [ -z "${p_job[$i]:-}" ] || kill -KILL "${p_job[$i]}" 2> /dev/null || true
    done
    rm -rf "$state"
}
trap cleanup EXIT

say "$n_procs process(es) on ${#hosts_here[@]} host(s), coordinator $endpoint, $workers worker(s)," \
    "logs in $log_dir"
say "watch it from any host: pixflow monitor --connect $endpoint${keys:+ --keys $(q "$keys")}"
coord=""  # index of the coordinator, when this launcher runs it
for ((i = 0; i < n_procs; i++)); do
    if [ "${p_role[$i]}" = coordinator ]; then
        coord=$i
        start_proc "$i"
        # The others join once it listens (they would retry for 15 s; this is plainer).
        deadline=$((SECONDS + READY_TIMEOUT_S))
        while [ ! -e "$state/$i.ready" ] && ! ended "$i" && [ "$SECONDS" -lt "$deadline" ] &&
              [ "$interrupts" = 0 ]; do nap 0.1; done
        if [ ! -e "$state/$i.ready" ]; then
            ended "$i" || [ "$interrupts" -gt 0 ] ||
                say "the coordinator did not listen on $endpoint within ${READY_TIMEOUT_S} s"
            ended "$i" || interrupts=2 interrupted=1
            break
        fi
    elif [ "$mode" = mpi ] && [ -z "$coord" ] && [ "$i" = 0 ]; then
        # Another rank: wait for rank 0's coordinator to listen.
        deadline=$((SECONDS + READY_TIMEOUT_S))
        until (exec 3<> "/dev/tcp/$bind_addr/$port") 2> /dev/null; do
            [ "$SECONDS" -lt "$deadline" ] && [ "$interrupts" = 0 ] ||
                { say "no coordinator at $endpoint within ${READY_TIMEOUT_S} s"; exit 1; }
            nap 0.5
        done
        start_proc "$i"
    else
        start_proc "$i"
    fi
done
# procs.tsv once every started process has reported its pid (or ended).
deadline=$((SECONDS + 30))
for ((i = 0; i < n_procs; i++)); do
    [ -n "${p_job[$i]:-}" ] || continue
    while [ ! -s "$state/$i.pid" ] && ! ended "$i" && [ "$SECONDS" -lt "$deadline" ]; do
        nap 0.1
    done
done
for ((i = 0; i < n_procs; i++)); do
    [ -n "${p_job[$i]:-}" ] || continue
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$i" "${p_host[$i]}" "${p_role[$i]}" "${p_rank[$i]}" \
        "$(pid_of "$i"; echo "$REPLY")" "$(log_of "$i")"
done | { printf 'index\thost\trole\trank\tpid\tlog\n'; cat; } > "$procs_tsv.tmp"
mv "$procs_tsv.tmp" "$procs_tsv"

# Loop until the coordinator (or, on another mpirun rank, every local process) has ended.
reported=()
killed_at=0
while :; do
    # Under mpirun, mpirun's death (SIGKILL included) leaves this launcher orphaned: stop the
    # job as on an interrupt. (Its daemons end the launchers of the other nodes.)
    if [ "$mode" = mpi ] && [ "$interrupts" = 0 ]; then
        read -r _ _ _ ppid_now _ < /proc/$$/stat 2> /dev/null || ppid_now=$PPID
        if [ "$ppid_now" != "$PPID" ]; then
            say "mpirun is gone (this launcher's parent $PPID died): stopping the job"
            interrupts=1
        fi
    fi
    if [ "$interrupts" -gt 0 ] && [ "$interrupted" = 0 ]; then
        interrupted=1
        stop_at=$((SECONDS + STOP_GRACE_S))
        if [ -n "$coord" ] && ! ended "$coord"; then
            say "interrupted: the coordinator checkpoints and stops the job (again to kill it)"
            signal_proc "$coord" INT
        else
            say "interrupted: waiting for the coordinator to stop the job (again to kill it)"
        fi
    fi
    if { [ "$interrupts" -gt 1 ] || { [ "$stop_at" -gt 0 ] && [ "$SECONDS" -ge "$stop_at" ]; }; } &&
       [ "$killed_at" = 0 ]; then
        if [ "$interrupts" -gt 1 ]; then say "second interrupt: terminating every process"
        else say "the job did not stop within ${STOP_GRACE_S} s: terminating every process"; fi
        signal_all TERM
        killed_at=$((SECONDS + 5))
    fi
    if [ "$killed_at" -gt 0 ] && [ "$SECONDS" -ge "$killed_at" ] && running; then
        say "killing what is left"
        signal_all KILL
        killed_at=$((SECONDS + 1000000))
    fi
    for ((i = 0; i < n_procs; i++)); do
        [ -z "${reported[$i]:-}" ] && ended "$i" || continue
        reported[i]=1
        status_of "$i"
        if [ "$REPLY" != 0 ] && [ "$REPLY" != 130 ]; then
            what=""
            [ "${p_role[$i]}" != loader ] || what="; its tickets go to the other loaders"
            st=$REPLY
            pid_of "$i"
            say "${p_role[$i]} ${p_rank[$i]} on ${p_host[$i]} (pid $REPLY) $(describe "$st" "$i")$what"
        fi
    done
    if [ -n "$coord" ]; then ended "$coord" && break
    elif ! running; then break; fi
    nap 0.5
done
# The coordinator has stopped the job: the others follow within EXIT_GRACE_S.
deadline=$((SECONDS + EXIT_GRACE_S))
while running && [ "$SECONDS" -lt "$deadline" ] && [ "$interrupts" -lt 2 ]; do
    nap 0.2
done
if running; then
    for ((i = 0; i < n_procs; i++)); do
        [ -z "${p_job[$i]:-}" ] || ended "$i" || say "${p_role[$i]} ${p_rank[$i]} on ${p_host[$i]} (pid $(pid_of "$i"; echo "$REPLY")) did not exit; terminating it"
    done
    signal_all TERM
    deadline=$((SECONDS + 5))
    while running && [ "$SECONDS" -lt "$deadline" ]; do nap 0.2; done
    signal_all KILL
    deadline=$((SECONDS + 5))
    while running && [ "$SECONDS" -lt "$deadline" ]; do nap 0.2; done
fi
for ((i = 0; i < n_procs; i++)); do
    [ -z "${p_job[$i]:-}" ] || wait "${p_job[$i]}" 2> /dev/null || true
done

# ---- failure summary and exit status -----------------------------------------------------------
failed=()
for ((i = 0; i < n_procs; i++)); do
    [ -n "${p_job[$i]:-}" ] || continue  # never started (the coordinator failed first)
    if ended "$i"; then status_of "$i"; st=$REPLY; else st=unknown; fi
    if [ "$st" != 0 ] && { [ "$st" != 130 ] || [ "$interrupted" = 0 ]; }; then failed+=("$i"); fi
done
if [ "${#failed[@]}" -gt 0 ]; then
    echo "$me: ${#failed[@]} process(es) did not end cleanly:" >&2
    printf '  %-16s %-12s %-5s %-8s %s\n' HOST ROLE RANK PID STATUS >&2
    for i in "${failed[@]}"; do
        if ended "$i"; then status_of "$i"; d=$(describe "$REPLY" "$i"); else d="did not exit"; fi
        pid_of "$i"
        pid=$REPLY
        printf '  %-16s %-12s %-5s %-8s %s\n' "${p_host[$i]}" "${p_role[$i]}" "${p_rank[$i]}" \
            "${pid:--}" "$d" >&2
        tail -n 3 "$(log_of "$i")" 2> /dev/null | sed 's/^/      | /' >&2 || true
    done
fi
if [ -n "$coord" ]; then
    if ended "$coord"; then status_of "$coord"; status=$REPLY; else status=1; fi
    [ -s "$state/$coord.exit" ] || status=1
    case $status in
        0) say "done; logs in $log_dir" ;;
        130) say "stopped with a checkpoint; continue with: $0 ... $config -- --resume auto" ;;
        *) say "the job failed (coordinator: $(describe "$status" "$coord")); logs in $log_dir" ;;
    esac
    exit "$status"
fi
# Another mpirun rank: its workers decide (a lost loader does not fail the job).
for i in "${failed[@]:-}"; do
    [ -z "$i" ] || [ "${p_role[$i]}" = loader ] || exit 1
done
exit 0
