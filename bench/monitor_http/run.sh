#!/usr/bin/env bash
# bench/monitor_http/run.sh [--smoke] BUILD_DIR [SECONDS (600)] [ITERS (100000)] — issue 36's benchmark of the
# monitor's HTTP server (bench/README.md, "Monitor HTTP server"): bench_monitor_http (a synthetic
# 100k-iteration job fed to cli/monitor_http.c as the monitor's reactor feeds it) measured by
# measure.py: state + curves latency, server CPU while streaming 50 events/s to 5 SSE clients,
# RSS over SECONDS, ITERS iterations filled in first. Writes
# bench/results/monitor_http_<date>_<commit>_<SECONDS>s[_<ITERS>it].txt with the
# machine, date and commit; --smoke: 3 s, 3 requests, nothing written.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
src=$(cd "$here/../.." && pwd)
smoke=0
if [ "${1:-}" = --smoke ]; then smoke=1; shift; fi
build=${1:?usage: run.sh [--smoke] BUILD_DIR [SECONDS] [ITERS]}
seconds=${2:-600}
iters=${3:-100000}
driver=$build/bench/bench_monitor_http
[ -x "$driver" ] || cmake --build "$build" --target bench_monitor_http
if [ "$smoke" = 1 ]; then
    exec timeout 120 python3 "$here/measure.py" "$driver" 3 --requests 3 --sample 1
fi
commit=$(git -C "$src" rev-parse --short HEAD)
# what the driver is built from: the server, common/, hooks/event_json, bench/
git -C "$src" diff --quiet HEAD -- cli/monitor_http.c cli/monitor_http.h common hooks/event_json.c bench || commit="$commit+dirty"
suffix=${seconds}s
[ "$iters" = 100000 ] || suffix=${suffix}_${iters}it
out=$src/bench/results/monitor_http_$(date -u +%Y-%m-%d)_${commit}_${suffix}.txt
{
    echo "# bench/monitor_http/run.sh $build $seconds $iters"
    echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC'); commit: $commit; host load before: $(cut -d' ' -f1-3 /proc/loadavg)"
    lscpu | head -n 15
    echo
    rc=0
    timeout $((seconds + 300)) python3 "$here/measure.py" "$driver" "$seconds" --iters "$iters" || rc=$?
    echo
    echo "host load after: $(cut -d' ' -f1-3 /proc/loadavg); measure.py status $rc"
    exit "$rc"
} 2>&1 | tee "$out" || st=$?
echo "wrote $out"
exit "${st:-0}"
