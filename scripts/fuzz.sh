#!/usr/bin/env bash
# fuzz.sh [SECONDS [TARGET...]] — run every libFuzzer target (tests/fuzz: fuzz_msg, fuzz_png,
# fuzz_jpeg, fuzz_config, fuzz_http_path; or the TARGETs named, e.g. yaml_fyaml
# yaml_libyaml, the YAML libraries alone on the config seeds) for SECONDS each (default 600),
# one after the other, each on a fresh copy of its seed corpus. Builds the targets first (in build/, or $PF_BUILD_DIR; configures it when
# it is not). Writes a summary (runs, execs/s, coverage, crashes) to
# bench/results/fuzz_<date>_<commit>.txt; crash inputs stay under
# <build>/tests/fuzz/long/<target>/artifacts/ (add them to tests/fuzz/regressions/<target>/
# once fixed). Exit status 1 when any target found something.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SECONDS_EACH="${1:-600}"
BUILD="${PF_BUILD_DIR:-$ROOT/build}"
TARGETS=(msg png jpeg config http_path)
[ $# -gt 1 ] && TARGETS=("${@:2}")
die() { echo "fuzz.sh: $*" >&2; exit 2; }
[[ "$SECONDS_EACH" =~ ^[0-9]+$ ]] || die "SECONDS must be a whole number, not '$SECONDS_EACH'"

[ -f "$BUILD/CMakeCache.txt" ] || cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD" --target "${TARGETS[@]/#/fuzz_}" >/dev/null 2>&1 ||
    die "could not build the fuzz targets: needs clang with libFuzzer (see the PixFlow: lines of cmake -S $ROOT -B $BUILD)"

mkdir -p "$ROOT/bench/results"
commit="$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
tag=""
[ $# -gt 1 ] && tag="_$(IFS=_; echo "${TARGETS[*]}")"
out="$ROOT/bench/results/fuzz_$(date -u +%Y-%m-%d)_${commit}${tag}.txt"
{
    echo "# scripts/fuzz.sh $SECONDS_EACH — $(date -u '+%Y-%m-%d %H:%M UTC'), commit $commit$(git -C "$ROOT" diff --quiet HEAD 2>/dev/null || echo ' (+ local changes)')"
    echo "# $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), $(clang --version | head -1)"
    echo "# cov/ft: libFuzzer's edge and feature counts over the instrumented code (PixFlow's"
    echo "# sources; the system libpng/libjpeg/libyaml/msgpack are not instrumented)"
    printf '%-12s %8s %12s %10s %6s %6s %10s %8s  %s\n' target seconds runs execs/s cov ft corpus rss_mb result
} >"$out"
found=0
for t in "${TARGETS[@]}"; do
    work="$BUILD/tests/fuzz/long/$t"
    echo "fuzz.sh: fuzz_$t for $SECONDS_EACH s" >&2
    rc=0
    seeds="$ROOT/tests/fuzz/corpus/$t"
    case $t in yaml_*) seeds="$ROOT/tests/fuzz/corpus/config" ;; esac
    bash "$ROOT/tests/fuzz/run.sh" "$BUILD/tests/fuzz/fuzz_$t" "$seeds" \
        "$work" "$SECONDS_EACH" >/dev/null || rc=$?
    log="$work/log"
    st() { awk -v k="stat::$1:" '$1 == k { print $2 }' "$log"; }
    last="$(grep -E "^#[0-9]+" "$log" | tail -1 || true)"
    cov="$(sed -nE 's/.* cov: ([0-9]+).*/\1/p' <<<"$last")"
    ft="$(sed -nE 's/.* ft: ([0-9]+).*/\1/p' <<<"$last")"
    corp="$(sed -nE 's/.* corp: ([0-9]+\/[0-9]+[a-zA-Z]*).*/\1/p' <<<"$last")"
    result=ok
    if [ "$rc" != 0 ]; then
        found=1
        result="FOUND (exit $rc): $(grep -m1 -E 'ERROR: |SUMMARY: ' "$log" | sed 's/^==[0-9]*== *//' || true) $(ls "$work/artifacts" | tr '\n' ' ')"
    fi
    printf '%-12s %8s %12s %10s %6s %6s %10s %8s  %s\n' "fuzz_$t" "$SECONDS_EACH" \
        "$(st number_of_executed_units)" "$(st average_exec_per_sec)" "${cov:-?}" "${ft:-?}" \
        "${corp:-?}" "$(st peak_rss_mb)" "$result" >>"$out"
done
cat "$out"
echo "fuzz.sh: summary in $out" >&2
exit "$found"
