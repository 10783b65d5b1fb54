#!/usr/bin/env bash
# setup.sh — install PixFlow's build dependencies (Debian 12) and build it.
#
#   scripts/setup.sh              install missing packages, then configure and build (Release)
#   scripts/setup.sh --deps-only  install missing packages only
#   scripts/setup.sh --test-deps  also install what ctest's scripted entries need (TEST_PKGS:
#                                 curl, for tests/e2e_monitor_http.sh; python3 with numpy
#                                 and PIL, for the bench_smoke.* runs'
#                                 pictures and profiles; ffmpeg, the reference decoder of
#                                 tests/test_video.c; slurm-wlm's slurmctld, slurmd,
#                                 slurm-client and munge, for tests/e2e_slurm.sh's two-node
#                                 cluster; OpenMPI's mpirun for tests/e2e_mpi.sh;
#                                 chromium, for tests/e2e_dashboard.sh; python3-onnx,
#                                 nodejs and npm for ctest onnx.checker / onnx.runtime, then
#                                 onnxruntime from the npm registry,
#                                 scripts/fetch-onnxruntime.sh, over HTTPS: ca-certificates);
#                                 scripts/test.sh passes it
#   scripts/setup.sh --ref-deps   also install the Python reference tools' packages (REF_PKGS:
#                                 python3-skimage, python3-torch, python3-torchvision (vgg19 of
#                                 the GAN references), python3-av, python3-scipy; for
#                                 tests/reference/*.py, scripts/*.py and bench/'s PyTorch
#                                 sides; ctest entries that
#                                 need them are skipped (77) without them)
#
# The packages: the build's (BUILD_PKGS) and iproute2, whose `ip netns` tests/test_two_host
# and tests/e2e_launch need. scripts/check-fresh-root.sh proves the list on a fresh Debian 12.
# Idempotent: packages already installed (dpkg -s) are skipped and apt is not touched at all
# when nothing is missing; `apt-get update` runs only when a missing package has no install
# candidate (fresh machine with empty lists). Works from any directory. Runs apt as is when
# root, through sudo otherwise. Build folder: <repo>/build.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

BUILD_PKGS="build-essential cmake pkg-config libzmq3-dev libmsgpack-dev libpng-dev libjpeg62-turbo-dev libyaml-dev libdnnl-dev ocl-icd-opencl-dev libcjson-dev libgloo-dev libprotobuf-c-dev protobuf-c-compiler libonnx-dev libczmq-dev libavformat-dev libavcodec-dev libswscale-dev libavutil-dev libmicrohttpd-dev"
RUN_PKGS="iproute2"
TEST_PKGS="curl python3 python3-numpy python3-pil ffmpeg slurmctld slurmd slurm-client munge openmpi-bin chromium python3-onnx nodejs ca-certificates"
REF_PKGS="python3-skimage python3-torch python3-torchvision python3-av python3-scipy python3-opencv"

say() { printf 'setup: %s\n' "$*"; }
die() { printf 'setup: error: %s\n' "$*" >&2; exit 1; }

deps_only=0
test_deps=0
ref_deps=0
for arg in "$@"; do
    case "$arg" in
        --deps-only) deps_only=1 ;;
        --test-deps) test_deps=1 ;;
        --ref-deps) test_deps=1; ref_deps=1 ;;
        -h|--help) sed -n '2,19p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) die "unknown option '$arg' (try --help)" ;;
    esac
done

command -v dpkg >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 \
    || die "this script needs a Debian-like system (dpkg, apt-get)"

SUDO=()
if [ "$(id -u)" != 0 ]; then
    if command -v sudo >/dev/null 2>&1; then SUDO=(sudo)
    else SUDO=(__no_root__)
    fi
fi
as_root() {
    [ "${SUDO[0]:-}" = __no_root__ ] && die "need root to run '$*' (not root, no sudo)"
    "${SUDO[@]}" "$@"
}

want="$BUILD_PKGS $RUN_PKGS"
[ "$test_deps" = 1 ] && want="$want $TEST_PKGS"
# npm: Debian's package, unless an npm is there already (NodeSource's nodejs holds its own
# and conflicts with Debian's npm)
[ "$test_deps" = 1 ] && ! command -v npm > /dev/null 2>&1 && want="$want npm"
[ "$ref_deps" = 1 ] && want="$want $REF_PKGS"

installed() {
    dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q '^install ok installed$'
}

missing=()
for p in $want; do installed "$p" || missing+=("$p"); done

if [ "${#missing[@]}" = 0 ]; then
    say "all packages present: $want"
else
    say "missing packages: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    need_update=0
    for p in "${missing[@]}"; do
        cand="$(apt-cache policy "$p" 2>/dev/null | awk '/Candidate:/{print $2}')"
        if [ -z "$cand" ] || [ "$cand" = "(none)" ]; then need_update=1; fi
    done
    if [ "$need_update" = 1 ]; then
        say "package lists are empty or stale; running apt-get update"
        as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q \
            || die "apt-get update failed (no network or no Debian mirror reachable?)"
    fi
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
        "${missing[@]}" || die "apt-get install failed for: ${missing[*]}"
    for p in "${missing[@]}"; do installed "$p" || die "package $p is still not installed"; done
    say "installed: ${missing[*]}"
fi

if [ "$test_deps" = 1 ]; then
    # onnxruntime for ctest onnx.runtime (skipped, 77, when this fails)
    "$ROOT/scripts/fetch-onnxruntime.sh" > /dev/null || say "warning: onnxruntime for Node not installed (onnx.runtime will skip)"
fi

if [ "$deps_only" = 1 ]; then
    say "--deps-only: not building"
    exit 0
fi

command -v cmake >/dev/null 2>&1 || die "cmake not on PATH after install"
jobs="$(nproc 2>/dev/null || echo 2)"
say "configuring $ROOT/build (Release)"
cmake -S "$ROOT" -B "$ROOT/build" -DCMAKE_BUILD_TYPE=Release || die "cmake configure failed"
say "building with -j$jobs"
cmake --build "$ROOT/build" -j"$jobs" || die "build failed"
say "done: binaries in $ROOT/build"
