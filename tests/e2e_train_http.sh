#!/usr/bin/env bash
# e2e_train_http — `pixflow train CONFIG --http [HOST:]PORT` (cli/train.c): the launcher runs
# `pixflow monitor --http` on its own job as one more process and stops it with the job.
# lib_e2e.sh's tiny EDSR job (3000 iterations, ~8 s here, log interval 1: metrics.jsonl,
# written by the log hook, has every iteration's loss). Checked with curl and python3 (json):
#   - --http on a port something else listens on: exit 2 before anything starts (no work_dir);
#     a bad address: exit 2;
#   - --http PORT (HOST 127.0.0.1, so no token): while the job runs, /api/state answers with
#     total_iters = the config's, 0 < iter <= total, not done, the worker on cpu; the loss curve
#     (width 10) read then has only points that metrics.jsonl has, with the same values;
#   - the job exits 0; within 5 s of its end the monitor process is gone and the port refuses;
#   - the job's outputs do not change: every logged loss and lr equal those of the same config
#     run without --http, and both leave iter_3000's checkpoint;
#   - the launcher SIGKILLed mid-run: every process of the job, the monitor too, ends within
#     10 s and the port refuses.
# Needs curl and python3; without them, 77.
set -euo pipefail

src=${PF_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
for p in curl python3; do
    command -v "$p" > /dev/null || { echo "SKIP: $p not found (scripts/setup.sh --test-deps)"; exit 77; }
done
root=$(mktemp -d /tmp/pixflow_e2e_train_http.XXXXXX)
# shellcheck source=tests/lib_e2e.sh
. "$src/tests/lib_e2e.sh"  # bin, fail, check, write_config, wait_for, losses, free_port, sigkill_launcher
pids=()
trap cleanup_pids EXIT
export OMP_NUM_THREADS=1

mkdir -p "$root/train"
cp "$data"/jpeg/{gray,photo,progressive,s444}.png "$root/train/"
TOTAL=3000

# a port already taken: refused before anything starts
taken=$(free_port)
timeout 60 python3 -c "import socket,time; s=socket.socket(); s.bind(('127.0.0.1',$taken)); s.listen(1); print('up', flush=True); time.sleep(50)" > "$root/holder.out" &
holder=$!
pids+=("$holder")
wait_for 10 grep -q up "$root/holder.out" || fail "the port holder did not start"
write_config "$root/taken.yaml" "$root/wd_taken" "$TOTAL" 500 1
st=0
timeout 60 "$bin" train "$root/taken.yaml" --http "$taken" > "$root/taken.out" 2>&1 || st=$?
check "a port taken: exit 2 (status $st)" test "$st" = 2
check "a port taken: says so" grep -q "cannot listen there" "$root/taken.out"
check "a port taken: nothing started (no work_dir)" test ! -e "$root/wd_taken"
kill "$holder" 2> /dev/null || true
st=0
timeout 60 "$bin" train "$root/taken.yaml" --http 10.0.0.300:80 > "$root/bad.out" 2>&1 || st=$?
check "a bad address: exit 2 (status $st)" test "$st" = 2

# the job with its dashboard
write_config "$root/cfg.yaml" "$root/wd" "$TOTAL" 500 1
port=$(free_port)
U=http://127.0.0.1:$port
timeout 150 "$bin" train "$root/cfg.yaml" --http "$port" > "$root/train.out" 2> "$root/train.err" &
job=$!
pids+=("$job")
wait_for 60 grep -q "serving http://127.0.0.1:$port/" "$root/train.err" ||
    fail "no 'serving' line from the launcher's monitor"
check "loopback: no token printed" bash -c "! grep -q token '$root/train.err'"
running_state() {
    timeout 10 curl -s --max-time 5 "$U/api/state" > "$root/state.json" 2> /dev/null &&
        python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); sys.exit(not (s["progress"]["iter"] > 0 and not s["job"]["done"]))' "$root/state.json" 2> /dev/null
}
wait_for 60 running_state || fail "/api/state never showed a running job"
timeout 10 curl -s --max-time 5 "$U/api/curves?name=loss&width=10" > "$root/curve.json" || true
running=$(kill -0 "$job" 2> /dev/null && echo yes || echo no)
check "the job was running while /api/state answered" test "$running" = yes
mon=$(sed -n 's/.*http monitor=\([0-9]*\).*/\1/p' "$root/train.out" | head -n1)
check "the launcher lists its http monitor process" test -n "$mon"

st=0
wait "$job" || st=$?
t_end=$SECONDS
check "the job with --http finished (status $st)" test "$st" = 0
gone() { ! kill -0 "$mon" 2> /dev/null && [ "$(timeout 5 curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$U/api/state" || true)" = 000 ]; }
wait_for 5 gone || fail "the monitor or its port still there 5 s after the job"
echo "ok: monitor gone, port closed $((SECONDS - t_end)) s after the job"

python3 - "$root/state.json" "$root/curve.json" "$root/wd/metrics.jsonl" "$TOTAL" << 'PY' && echo "ok: state and curve while running" || fail "state and curve while running"
import sys, json
s, c = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
total = int(sys.argv[4])
loss = {}
for l in open(sys.argv[3]):
    o = json.loads(l)
    if o.get("kind") == "train":
        loss[o["iter"]] = o["loss"]
p = s["progress"]
print(f"running: iter {p['iter']}/{p['total_iters']}, done {s['job']['done']}, workers "
      f"{[w['device'] for w in s['workers']]}; curve {c['points']} points of {c['added']} added, "
      f"x {c['x'][:1]}..{c['x'][-1:]}; metrics.jsonl {len(loss)} iterations")
assert p["total_iters"] == total and 0 < p["iter"] <= total and s["job"]["done"] is False
assert s["workers"] and s["workers"][0]["device"] == "cpu"
assert 0 < c["points"] <= 22 and c["added"] >= c["points"]
rel = lambda a, b: abs(a - b) <= 1e-6 * max(1.0, abs(b))
assert all(int(x) in loss and rel(y, loss[int(x)]) for x, y in zip(c["x"], c["y"])), \
    "a curve point not in metrics.jsonl"
PY

# the same job without --http: the same outputs
write_config "$root/ref.yaml" "$root/ref" "$TOTAL" 500 1
st=0
timeout 150 "$bin" train "$root/ref.yaml" > "$root/ref.out" 2>&1 || st=$?
check "the job without --http finished (status $st)" test "$st" = 0
check "every logged loss and lr equal with and without --http ($(losses "$root/wd" | wc -l) lines)" \
    cmp -s <(losses "$root/wd") <(losses "$root/ref")
check "both wrote iter_$TOTAL's checkpoint" \
    test -e "$root/wd/checkpoints/iter_$TOTAL.safetensors" -a -e "$root/ref/checkpoints/iter_$TOTAL.safetensors"
# the launcher killed outright: its monitor (--exit-with-parent) ends with the rest of the job
write_config "$root/kill.yaml" "$root/wd_kill" 100000 100000
port=$(free_port)
timeout 150 "$bin" train "$root/kill.yaml" --http "$port" > "$root/kill.out" 2> "$root/kill.err" &
killer=$!
pids+=("$killer")
if wait_for 60 grep -q "serving http://127.0.0.1:$port/" "$root/kill.err" &&
    wait_for 30 grep -q "http monitor=" "$root/kill.out"; then
    launcher=$(pgrep -P "$killer" | head -n1)
    mapfile -t job_pids < <(sed -n 's/.*processes: //p' "$root/kill.out" | tr ' ' '\n' | sed -n 's/.*=\([0-9]*\)$/\1/p')
    check "the killed job lists 8 processes (coordinator, worker, 3 hooks, 2 loaders, http monitor)" \
        test "${#job_pids[@]}" = 8
    sigkill_launcher "launcher SIGKILL with --http" "$launcher" "${job_pids[@]}"
    check "after the launcher's SIGKILL the port refuses" \
        test "$(timeout 5 curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://127.0.0.1:$port/api/state" || true)" = 000
else
    fail "the job to kill did not start serving"
fi
echo "e2e_train_http: $fails failed"
[ "$fails" = 0 ]
