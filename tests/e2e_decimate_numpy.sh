#!/usr/bin/env bash
# e2e_decimate_numpy — GET /api/curves' min/max decimation checked against numpy on synthetic
# runs with spikes (bench/dashboard/make_run.py: a train line per iteration, a loss spike about
# every 2000), served as finished runs by `pixflow monitor --http`:
#   - 60 000 iterations (under a curve's 65 536-point cap, so the server holds every point): at
#     widths 1, 7, 333, 1000, 4096, every bucket's min and max of the raw series (numpy, the
#     same bucket bounds b n / W) is among the points sent, at its step; first and last points
#     kept; at most 2 W + 2 points, steps increasing;
#   - 100 000 iterations (past the cap: compacted once, held < added): every spike of the raw
#     series (the largest value within 250 steps), the global min and max, and the first and
#     last points are still sent at width 1000.
# While it reads the runs the monitor answers 503 (Retry-After: 1), never half a run.
# Needs Debian's python3 with numpy (scripts/setup.sh --test-deps); 77 without it.
set -u
src=${PF_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
/usr/bin/python3 -c "import numpy" 2> /dev/null ||
    { echo "SKIP: /usr/bin/python3 with numpy not found (scripts/setup.sh --test-deps)"; exit 77; }
# shellcheck source=tests/lib_e2e.sh
. "$src/tests/lib_e2e.sh"  # bin, fail, check, wait_for
fails=0
root=$(mktemp -d "${TMPDIR:-/tmp}/pf-decimate.XXXXXX")
mon=""
cleanup() {
    [ -n "$mon" ] && kill "$mon" 2> /dev/null
    if [ "$fails" = 0 ]; then rm -rf "$root"; else echo "kept $root for a look" >&2; fi
}
trap cleanup EXIT
/usr/bin/python3 "$src/bench/dashboard/make_run.py" "$root/r60k" 60000 > /dev/null || fail "make_run 60000"
/usr/bin/python3 "$src/bench/dashboard/make_run.py" "$root/r100k" 100000 > /dev/null || fail "make_run 100000"
port=$(free_port)
timeout 300 "$bin" monitor --http "127.0.0.1:$port" "$root/r60k" "$root/r100k" > "$root/mon.out" 2> "$root/mon.err" &
mon=$!
# while it reads the runs it answers 503 "loading", never half a run: poll from its first line
wait_for 30 grep -q 'serving http' "$root/mon.err" || { fail "the monitor did not start"; exit 1; }
timeout 60 /usr/bin/python3 - "http://127.0.0.1:$port" << 'PY' || fail "answers while loading"
import json, sys, time, urllib.error, urllib.request
url, busy = sys.argv[1], 0
while True:
    try:
        with urllib.request.urlopen(url + "/api/curves?name=loss&width=10&run=r100k", timeout=5) as r:
            d = json.load(r)
        break
    except urllib.error.HTTPError as e:
        assert e.code == 503 and e.headers.get("Retry-After") == "1", (e.code, e.read())
        busy += 1
        time.sleep(0.01)
print("while loading: %d answers 503 (Retry-After 1), then the whole run: %d points added"
      % (busy, d["added"]))
assert d["added"] == 100000, d["added"]
PY
wait_for 60 grep -q 'served until' "$root/mon.err" || { fail "the monitor did not finish loading"; exit 1; }
timeout 120 /usr/bin/python3 - "http://127.0.0.1:$port" "$root" << 'PY' || fail "numpy checks"
import json, os, sys, urllib.request
import numpy as np
url, root = sys.argv[1], sys.argv[2]
fails = 0

def check(what, ok, detail=""):
    global fails
    print(("ok: " if ok else "FAIL: ") + what + (" (%s)" % detail if detail else ""))
    fails += not ok

def has(sent, xv, yv):
    """(xv, yv) among the points sent: the step exactly, the value as printed (%.9g)"""
    v = sent.get(float(xv))
    return v is not None and abs(v - yv) <= 1e-8 * abs(yv)


def raw(run):
    xs, ys = [], []
    with open(os.path.join(root, run, "metrics.jsonl")) as f:
        for line in f:
            e = json.loads(line)
            if e.get("kind") == "train":
                xs.append(e["iter"]); ys.append(e["loss"])
    return np.array(xs, dtype=np.float64), np.array(ys, dtype=np.float64)

def curve(run, width):
    with urllib.request.urlopen("%s/api/curves?name=loss&width=%d&run=%s" % (url, width, run),
                                timeout=30) as r:
        d = json.load(r)
    return d, np.array(d["x"], dtype=np.float64), np.array(d["y"], dtype=np.float64)

# 60k: every bucket's min and max
x, y = raw("r60k")
n = len(x)
for w in (1, 7, 333, 1000, 4096):
    d, ox, oy = curve("r60k", w)
    sent = dict(zip(ox.tolist(), oy.tolist()))
    check("60k: held every point (held %d, added %d)" % (d["held"], d["added"]),
          d["held"] == n and d["added"] == n)
    missing = 0
    for b in range(w):
        lo, hi = b * n // w, (b + 1) * n // w
        if hi <= lo:
            continue
        for i in (lo + int(np.argmin(y[lo:hi])), lo + int(np.argmax(y[lo:hi]))):
            missing += not has(sent, x[i], y[i])
    check("60k width %d: every bucket's min and max sent" % w, missing == 0,
          "%d missing of %d buckets, %d points sent" % (missing, w, len(ox)))
    check("60k width %d: first and last points, at most 2W+2, steps increasing" % w,
          has(sent, x[0], y[0]) and has(sent, x[-1], y[-1]) and len(ox) <= 2 * w + 2 and
          bool(np.all(np.diff(ox) > 0)))

# 100k: compacted once; the spikes survive
x, y = raw("r100k")
d, ox, oy = curve("r100k", 1000)
sent = dict(zip(ox.tolist(), oy.tolist()))
check("100k: compacted (held %d < added %d)" % (d["held"], d["added"]),
      d["held"] < d["added"] == len(x))
# a spike: a point over 3 times both its neighbours and the largest value within 250 steps
# either side (a bucket spans at most ~200 steps here: 1000 buckets over the held points, which
# stand for ~4 steps each where compacted; a smaller spike beside a larger one in the same
# bucket gives way to it, as min/max decimation should)
R = 250
spikes = [i for i in range(1, len(y) - 1) if y[i] > 3 * max(y[i - 1], y[i + 1]) and
          y[i] == y[max(0, i - R):i + R + 1].max()]
kept = sum(has(sent, x[i], y[i]) for i in spikes)
check("100k width 1000: every spike (over 3 x both neighbours, the largest within 250 steps) "
      "sent", kept == len(spikes) and len(spikes) > 10,
      "%d of %d" % (kept, len(spikes)))
check("100k: global min and max, first and last sent",
      has(sent, x[np.argmin(y)], y.min()) and has(sent, x[np.argmax(y)], y.max()) and
      has(sent, x[0], y[0]) and has(sent, x[-1], y[-1]))
print("numpy checks: %d failed" % fails)
sys.exit(1 if fails else 0)
PY
echo "e2e_decimate_numpy: $fails failed"
[ "$fails" = 0 ]
