#!/usr/bin/env bash
# e2e_dashboard — the dashboard page (docs/dashboard.md) in headless Chromium, driven over the
# DevTools protocol by tests/dashboard_check.py (Python stdlib, tests/cdp.py; no Node):
#   - the page of a running job, as served (no script run): the snapshot is in the HTML;
#   - in the browser: every chart drew exactly the points the server sent it, the snapshot
#     follows the job (iteration grows), the live event stream is open and counted;
#   - a loader killed with -9 shows dead (its row's data-alive false) within 5 s;
#   - images: the eval viewer lists the files of eval_visuals/iter_N, the step slider moves
#     every panel, the A/B split dragged with synthetic mouse events shows B's pixels where it
#     showed A's (read back from the canvas, compared with the served images);
#   - a screenshot of the page (kept under the build folder for a look);
#   - two finished runs served by one monitor: ticking both overlays their curves (each run's
#     series as the server sends it) and shows their eval images side by side.
# Needs Debian's chromium (77 and a message without it), curl and python3.
set -u
src=${PF_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
for p in curl python3; do
    command -v "$p" > /dev/null || { echo "SKIP: $p not found (scripts/setup.sh --test-deps)"; exit 77; }
done
python3 -c "import sys; sys.path.insert(0, '$src/tests'); import cdp; sys.exit(0 if cdp.find_chromium() else 77)" ||
    { echo "SKIP: no chromium (apt-get install chromium, or scripts/setup.sh --test-deps)"; exit 77; }
data=${PF_TEST_DATA:-$src/tests/data}
fails=0
root=$(mktemp -d "${TMPDIR:-/tmp}/pf-dash.XXXXXX")
pids=()
# shellcheck source=tests/lib_e2e.sh
. "$src/tests/lib_e2e.sh"  # bin, fail, check, eval_job_config, cleanup_pids, free_port, wait_for
trap cleanup_pids EXIT
export OMP_NUM_THREADS=1

# a job long enough to watch for a while on a slow machine; stopped at the end
eval_job_config "$root" 1000000
echo "visual_config: {interval: 1000, num_samples: 2}" >> "$root/cfg.yaml"
timeout 300 "$bin" train "$root/cfg.yaml" > "$root/train.out" 2>&1 &
job=$!
pids+=("$job")
wait_for 60 test -s "$root/wd/coordinator.addr" || { fail "no coordinator.addr"; exit 1; }
addr=$(head -n1 "$root/wd/coordinator.addr")
port=$(free_port)
timeout 300 "$bin" monitor --connect "$addr" --interval 60 --http "127.0.0.1:$port" \
    > "$root/mon.out" 2> "$root/mon.err" &
pids+=("$!")
wait_for 20 grep -q 'serving http' "$root/mon.err" || { fail "monitor did not start serving"; exit 1; }
url=http://127.0.0.1:$port
# wait for the first evaluation, so every curve has points
wait_for 120 sh -c "timeout 5 curl -s '$url/api/state' | grep -q '\"psnr\"'" || fail "no evaluation in 120 s"

# as served: the snapshot is in the HTML itself
timeout 10 curl -s "$url/" > "$root/page.html"
check "the page holds the snapshot (iteration, loaders, eval table)" \
    grep -q 'id="pf-iter">[0-9]' "$root/page.html"
check "the page names the loaders" grep -q 'data-name="loader' "$root/page.html"

# two evaluations and grids, so the step slider has somewhere to go
wait_for 120 sh -c "timeout 5 curl -s '$url/api/images' | grep -q '\"step\":2000'" ||
    fail "no second evaluation in 120 s"
timeout 120 python3 "$src/tests/dashboard_check.py" "$url" "${PF_SCREENSHOT:-$root/dashboard.png}" \
    "$root/wd" ||
    fail "dashboard_check.py"
kill "$job" 2> /dev/null
wait "$job" 2> /dev/null

# two finished runs side by side: the job's folder and a copy cut to its first half
mkdir -p "$root/wd2"
cp -r "$root/wd/eval_visuals" "$root/wd/config.yaml" "$root/wd2/"
head -n "$(( $(wc -l < "$root/wd/metrics.jsonl") / 2 ))" "$root/wd/metrics.jsonl" > "$root/wd2/metrics.jsonl"
port2=$(free_port)
timeout 120 "$bin" monitor --http "127.0.0.1:$port2" "$root/wd" "$root/wd2" > "$root/mon2.out" 2> "$root/mon2.err" &
pids+=("$!")
wait_for 20 grep -q 'served until' "$root/mon2.err" || fail "the finished-runs monitor did not start"
timeout 120 python3 "$src/tests/dashboard_check.py" --runs "http://127.0.0.1:$port2" ||
    fail "dashboard_check.py --runs"
echo "e2e_dashboard: $fails failed"
[ "$fails" = 0 ]
