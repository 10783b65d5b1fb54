#!/bin/bash
# ab_identical — two builds of PixFlow must train and infer bit for bit alike (issue 38's
# safety net for refactors that promise "behaviour unchanged").
#
# For every network config (configs/zoo/*.yaml, configs/demo.yaml, configs/demo_video.yaml) each
# build trains STEPS (20) iterations from the config's seed and runs `pixflow test` on the final
# checkpoint; then per config one line:
#   config  steps  losses identical yes/no  checkpoint identical yes/no  outputs identical yes/no
#   - losses: the "loss" of every "train" line of metrics.jsonl (log_config.interval 1), step by
#     step; cJSON prints a double with the digits that read back to the same bits;
#   - checkpoint: every file of work_dir/checkpoints (weights, Adam state) byte for byte; when
#     they differ, which tensors and which metadata keys (config_hash counts: it is what a
#     resume compares);
#   - outputs: every file `pixflow test` writes (the PNGs and results.tsv) byte for byte.
# Exit status 1 on any difference or failed run, 2 on bad usage.
#
# The configs are made small by derive.py (bench/ab_identical/derive.py: the network as
# configured, GT patch 16 LQ pixels, batch 2, 1 loader, no evaluation hook, work_dir in a
# temporary folder) on bench/smoke_data.py's images; video configs on data/demo_video
# (scripts/fetch-demo-video.sh; VIDEO_DATA to point elsewhere), skipped with a line when absent.
# Both builds run in the same work_dir path one after the other, so no path differs.
#
# usage: bench/ab_identical/run.sh [--smoke] [--shrink] [--keep] OLD NEW
#   OLD, NEW: a build folder holding `pixflow`, a `pixflow` binary, or a git revision of this
#     repository, built (Release, target pixflow, -j JOBS (2)) once into build-ab/<sha12>
#     (ignored by git; reused by later runs) from a temporary `git worktree`.
#   --smoke: configs/demo.yaml only, 3 steps, nothing written to bench/results.
#   --shrink: also cap widths (32) and depths (2 blocks / groups): seconds instead of minutes.
#   --keep: keep the temporary folder (derived configs, both sides' work_dirs) and print it.
#   env: STEPS (20), CONFIGS (config paths, default as above), OMP_NUM_THREADS (1),
#   RUN_TIMEOUT (600 s per train / test), OLD_NAME / NEW_NAME (default: the commit, when known).
# Output also goes to bench/results/ab_identical_<date>_<old>_<new>.txt (<date>_<commit>.txt when
# both have one name; _shrink before .txt with --shrink; not with --smoke). A build folder is named by the commit its source tree is
# at when the script runs: rebuild it first, or set OLD_NAME / NEW_NAME.

# The body is one { ... } block: bash reads it whole before running it, so editing this file
# during a run (as one does while refactoring) cannot change the run.
{
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
smoke=0 shrink=0 keep=0
while [ $# -gt 0 ]; do
  case $1 in
    --smoke) smoke=1; shift ;;
    --shrink) shrink=1; shift ;;
    --keep) keep=1; shift ;;
    --*) echo "ab_identical: unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
done
[ $# -eq 2 ] || { awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0" >&2; exit 2; }
py=/usr/bin/python3
steps=${STEPS:-20}
run_timeout=${RUN_TIMEOUT:-600}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
video_data=${VIDEO_DATA:-$root/data/demo_video}
if [ "$smoke" = 1 ]; then
  configs=${CONFIGS:-$root/configs/demo.yaml}
  steps=${STEPS:-3}
else
  configs=${CONFIGS:-$(ls "$root"/configs/zoo/*.yaml) $root/configs/demo.yaml $root/configs/demo_video.yaml}
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/pixflow-ab-identical.XXXXXX")
building=""     # the temporary worktree of a build in progress
cleanup() {
  [ -z "$building" ] || git -C "$root" worktree remove --force "$building" || true
  if [ "$keep" = 1 ]; then echo "ab_identical: kept $tmp" >&2; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# commit_of DIR: the short commit a build folder was configured from (+dirty when its tree has
# uncommitted changes to tracked files), or nothing.
commit_of() {
  local src
  src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$1/CMakeCache.txt" 2>/dev/null) || return 0
  [ -n "$src" ] && git -C "$src" rev-parse --short HEAD 2>/dev/null || return 0
  git -C "$src" diff --quiet HEAD 2>/dev/null || echo "+dirty"
}

# resolve ARG SIDE: sets bin and name for a build folder, a binary or a revision (built here).
resolve() {
  local arg=$1 side=$2
  if [ -x "$arg/pixflow" ] && [ -f "$arg/pixflow" ]; then
    bin=$(cd "$arg" && pwd)/pixflow
    name=$(commit_of "$arg" | tr -d '\n')
    case $(cd "$arg" && pwd) in      # one of ours: build-ab/<sha12>
      "$root"/build-ab/*) name=${name:-$(basename "$arg" | cut -c1-7)} ;;
    esac
    name=${name:-$(basename "$arg")}
  elif [ -f "$arg" ] && [ -x "$arg" ]; then
    bin=$(cd "$(dirname "$arg")" && pwd)/$(basename "$arg")
    name=$(commit_of "$(dirname "$arg")" | tr -d '\n')
    name=${name:-$(basename "$(dirname "$arg")")}
  elif sha=$(git -C "$root" rev-parse --verify --quiet "$arg^{commit}"); then
    local short=${sha:0:12} dir="$root/build-ab/${sha:0:12}"
    name=${sha:0:7}
    bin=$dir/pixflow
    if [ ! -x "$bin" ]; then
      local src="$tmp/src-$short" log="$tmp/build-$short.log"
      echo "ab_identical: building $arg ($short) into $dir (log $log)" >&2
      building=$src
      rm -rf "$dir"     # a build cut short: its cache names a source folder that is gone
      git -C "$root" worktree add --detach "$src" "$sha" > "$log" 2>&1
      if ! { timeout 3600 cmake -S "$src" -B "$dir" -DCMAKE_BUILD_TYPE=Release &&
             timeout 3600 cmake --build "$dir" -j "${JOBS:-2}" --target pixflow; } >> "$log" 2>&1; then
        tail -20 "$log" >&2
        echo "ab_identical: building $arg failed" >&2
        exit 1
      fi
      git -C "$root" worktree remove --force "$src"
      building=""
    fi
  else
    echo "ab_identical: $side '$arg' is neither a build folder, a pixflow binary nor a revision" >&2
    exit 2
  fi
}
resolve "$1" old; ob=$bin on=${OLD_NAME:-$name}
resolve "$2" new; nb=$bin nn=${NEW_NAME:-$name}

if [ "$smoke" = 1 ]; then
  out="$tmp/ab_identical_smoke.txt"
else
  mkdir -p "$root/bench/results"
  pair=$([ "$on" = "$nn" ] && echo "$on" || echo "${on}_${nn}")
  out="$root/bench/results/ab_identical_$(date -u +%F)_${pair}$([ "$shrink" = 0 ] || echo _shrink).txt"
fi
exec > >(tee "$out")

"$py" "$root/bench/smoke_data.py" "$tmp/images"
shrink_flag=()
[ "$shrink" = 0 ] || shrink_flag=(--shrink)

echo "ab_identical: $(date -u '+%F %T') UTC, old $on ($ob), new $nn ($nb), $steps steps," \
     "OMP_NUM_THREADS $OMP_NUM_THREADS$([ "$shrink" = 1 ] && echo ', shrunk networks')"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"

# side BIN DIR CFG: train then test with BIN in $tmp/run, then move the work_dir to DIR.
# Returns the first failing command's status; its output is in DIR/{train,test}.out.
side() {
  local bin=$1 dest=$2 cfg=$3 rc=0
  rm -rf "$tmp/run"
  mkdir -p "$tmp/run"
  timeout "$run_timeout" "$bin" train "$cfg" > "$tmp/run/train.out" 2>&1 || rc=$?
  if [ "$rc" = 0 ]; then
    local ckpt
    ckpt="$tmp/run/checkpoints/$(cat "$tmp/run/checkpoints/latest" 2>/dev/null)"
    timeout "$run_timeout" "$bin" test "$cfg" --checkpoint "$ckpt" > "$tmp/run/test.out" 2>&1 || rc=$?
  fi
  mv "$tmp/run" "$dest"
  return "$rc"
}

fail=0
printf '%-18s %5s  %-17s  %-20s  %-17s  %s\n' config steps "losses identical" \
       "checkpoint identical" "outputs identical" "(detail)"
t_all=$(date +%s)
for cfg in $configs; do
  c=$(basename "$cfg" .yaml)
  t0=$(date +%s)
  if grep -q '^ *clips:' "$cfg" && [ ! -d "$video_data" ]; then
    printf '%-18s skipped: no %s (scripts/fetch-demo-video.sh)\n' "$c" "$video_data"
    continue
  fi
  d="$tmp/$c"
  mkdir -p "$d"
  "$py" "$here/derive.py" "$cfg" "$d/config.yaml" "$tmp/run" "$tmp/images" "$video_data" \
        "$steps" "${shrink_flag[@]}"
  st=""
  side "$ob" "$d/old" "$d/config.yaml" || st+=" old failed (status $?, $d/old/*.out)"
  side "$nb" "$d/new" "$d/config.yaml" || st+=" new failed (status $?, $d/new/*.out)"
  if [ -n "$st" ]; then
    printf '%-18s FAILED:%s\n' "$c" "$st"
    for s in old new; do tail -3 "$d/$s/train.out" "$d/$s/test.out" 2>/dev/null | sed "s/^/  $s: /"; done
    fail=1
    [ "$keep" = 1 ] || rm -rf "$d/old" "$d/new"
    continue
  fi
  line=$("$py" "$here/compare.py" "$d/old" "$d/new" "$steps") || fail=1
  printf '%-18s %s  (%d s)\n' "$c" "$line" "$(( $(date +%s) - t0 ))"
  [ "$keep" = 1 ] || rm -rf "$d/old" "$d/new"
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg); $(( $(date +%s) - t_all )) s in all"
if [ "$fail" = 0 ]; then
  echo "ab_identical: old $on and new $nn are bit-identical on every config run"
else
  echo "ab_identical: DIFFERENCES between old $on and new $nn (lines above)"
fi
exit "$fail"
}
