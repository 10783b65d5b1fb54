#!/usr/bin/env bash
# bench/dashboard/run.sh [--smoke] BUILD [LOADS] [STAY_S] [ITERS] — issue 37's page bar: a
# 100k-iteration finished run's dashboard in headless Chromium, navigation to curves drawn
# (bar 1 s) and JS heap (bar 100 MB), measured by page_load.py (which says how). Writes
# bench/results/dashboard_<date>_<commit>.txt: the machine (lscpu), load average, chromium's
# version and page_load.py's output.
#
# --smoke (ctest bench_smoke.dashboard): a 10 000-iteration run, one load, 2 s on the page,
# nothing written to bench/results; only that the script and its checks still work. 77
# without chromium or python3.
set -u
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
smoke=0
if [ "${1:-}" = --smoke ]; then smoke=1; shift; fi
build=$(cd "${1:?usage: run.sh [--smoke] BUILD [LOADS] [STAY_S] [ITERS]}" && pwd)
loads=${2:-5} stay=${3:-30} iters=${4:-100000}
command -v python3 > /dev/null || { echo "dashboard bench: no python3; skipped"; exit 77; }
[ -x "$build/pixflow" ] || { echo "dashboard bench: no $build/pixflow (build it first)"; exit 1; }

if [ $smoke = 1 ]; then
    exec timeout 120 python3 "$here/page_load.py" "$build" --iters 10000 --loads 1 --stay 2 --smoke
fi

limit=$(( 120 + loads * (${stay%.*} + 60) ))
commit=$(git -C "$repo" rev-parse --short HEAD)
git -C "$repo" diff --quiet HEAD -- web cli bench/dashboard || commit="$commit+dirty"
out="$repo/bench/results/dashboard_$(date -u +%Y-%m-%d)_${commit}.txt"
chromium=$(python3 -c "import sys; sys.path.insert(0, '$repo/tests'); import cdp; print(cdp.find_chromium() or '')")
{
    echo "# bench/dashboard/run.sh $build $loads $stay $iters — $(date -u '+%Y-%m-%d %H:%M UTC'), commit $commit"
    echo "# machine:"
    lscpu | head -15 | sed 's/^/#   /'
    echo "# load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "# chromium: ${chromium:-none} $( [ -n "$chromium" ] && timeout 20 "$chromium" --version 2>/dev/null)"
} > "$out.tmp"
cat "$out.tmp"
timeout "$limit" python3 "$here/page_load.py" "$build" --iters "$iters" --loads "$loads" \
    --stay "$stay" 2>&1 | tee -a "$out.tmp"
rc=${PIPESTATUS[0]}
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg); exit $rc" | tee -a "$out.tmp"
if [ "$rc" = 77 ]; then rm -f "$out.tmp"; exit 77; fi
mv "$out.tmp" "$out"
echo "written: $out"
exit "$rc"
