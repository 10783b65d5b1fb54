#!/usr/bin/env bash
# e2e_monitor_http — `pixflow monitor --connect EP --http HOST:PORT` (cli/monitor_http.c,
# docs/protocol.md "Monitor HTTP API") on a tiny EDSR job (4000 iterations, ~10 s, log interval 1, so
# metrics.jsonl, written by the log hook, holds every iteration's loss independently of the
# monitor). Two monitors: A on 127.0.0.1 (no token, a ring big enough for the whole run), B on
# 0.0.0.0 (token required, a ring of 16 events, 2 clients at most). Checked with curl and
# python3 (json):
#   - events live while the job runs: ids strictly increasing;
#   - after the job: /api/state parses, iter == total_iters == the last iteration in
#     metrics.jsonl, the job is done, loaders (with host) and the worker are listed, the eval
#     history (PSNR and bicubic PSNR, every 1000 iterations on 2 images) equals metrics.jsonl's
#     eval lines and the last checkpoint is iter_4000;
#   - /api/events from the start on A: ids 1..N without a hole, no gap event; a reconnect with
#     Last-Event-ID K gets exactly ids K+1..N with the same data (none lost, none doubled);
#   - on B, Last-Event-ID 0 after N > 16 events: `event: gap` naming 1..N-16, then N-15..N;
#     Last-Event-ID beyond N (an earlier monitor's): `event: reset`, then that gap and N-15..N;
#   - /api/curves?name=loss&width=10: at most 22 points, first and last steps of the run kept,
#     its max and min equal metrics.jsonl's max and min loss; psnr equals the eval lines;
#   - requests: /../etc/passwd (curl --path-as-is), unknown path, POST, DELETE, a 1 MiB header,
#     1000 garbage requests: each a 4xx, or the connection closed, or 505 for an unknown HTTP
#     version (libmicrohttpd's answer, as RFC 9110 says), and /api/state still 200;
#   - B: no token or a wrong one 401; Bearer token or ?token= 200; a third request while two
#     SSE streams are open 503;
#   - images and files (A, the monitor of the job): /api/images lists the steps of
#     grids/iter_N.png (visual_config.output_dir, outside wd) and wd/eval_visuals/iter_N/NAME
#     as os.listdir sees them; a visual grid and an eval image fetched by step (/api/image)
#     are the bytes on disk, image/png, and so is the eval image through /files/; metrics.jsonl application/json, train.log text/plain; traversal (raw
#     and percent-encoded), absolute, %00, a symlink out of wd, a folder, a checkpoint (type
#     not served), a missing step: 4xx; a symlink inside wd: 200 and its target's bytes;
#   - B, given --work-dir WD/: /api/runs names wd, /files/ serves WD's files, its grids are
#     looked for in WD/visuals (none there);
#   - SIGTERM ends both monitors with status 0;
#   - finished runs: `pixflow monitor --http ADDR WD WD2` (WD2 a copy of WD whose
#     metrics.jsonl keeps its first half): /api/runs names both; for each, by index and by
#     name, /api/state's iter, total_iters, done (a coordinator `done` line or the last
#     iteration reached: WD yes, WD2 no) and eval history, and /api/curves (loss and
#     psnr, width 100000: every point) equal a reading of its metrics.jsonl in Python;
#     /api/images and an image per run as above; an unknown run 404.
# Needs curl and python3; without them, 77.
set -euo pipefail

src=${PF_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
for p in curl python3; do
    command -v "$p" > /dev/null || { echo "SKIP: $p not found (scripts/setup.sh --test-deps)"; exit 77; }
done
root=$(mktemp -d /tmp/pixflow_e2e_monitor_http.XXXXXX)
# shellcheck source=tests/lib_e2e.sh
. "$src/tests/lib_e2e.sh"  # bin, fail, check, eval_job_config, cleanup_pids, free_port, wait_for
pids=()
trap cleanup_pids EXIT
export OMP_NUM_THREADS=1

# code URL [CURL ARGS...]: the HTTP status (000: no answer)
code() { local u=$1; shift; timeout 10 curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$@" "$u" || true; }
# sse URL SECONDS OUT [CURL ARGS...]: the event stream for SECONDS
sse() { local u=$1 t=$2 o=$3; shift 3; timeout $((t + 5)) curl -sN --max-time "$t" "$@" "$u" > "$o" || true; }

TOTAL=4000
# lib_e2e.sh's tiny EDSR job, with an eval set and evaluation every 1000 iterations
eval_job_config "$root" "$TOTAL"
# the grids outside the work_dir: the monitor must take output_dir from the job's config
echo "visual_config: {interval: 1000, num_samples: 2, output_dir: $root/grids}" >> "$root/cfg.yaml"
timeout 150 "$bin" train "$root/cfg.yaml" > "$root/train.out" 2>&1 &
job=$!
pids+=("$job")
wait_for 60 test -s "$root/wd/coordinator.addr" || { fail "no coordinator.addr"; exit 1; }
addr=$(head -n1 "$root/wd/coordinator.addr")
pa=$(free_port)
pb=$(free_port)
A=http://127.0.0.1:$pa
B=http://127.0.0.1:$pb
timeout 200 "$bin" monitor --connect "$addr" --history 4096 --interval 60 --http "127.0.0.1:$pa" \
    --http-ring 100000 > "$root/monA.out" 2> "$root/monA.err" &
monA=$!
pids+=("$monA")
timeout 200 "$bin" monitor --connect "$addr" --history 4096 --interval 60 --http "0.0.0.0:$pb" \
    --http-ring 16 --http-clients 2 --work-dir "$root/wd/" > "$root/monB.out" 2> "$root/monB.err" &
monB=$!
pids+=("$monB")
wait_for 20 grep -q 'serving http' "$root/monA.err" || fail "monitor A did not start serving"
wait_for 20 grep -q 'token [0-9a-f]\{32\}' "$root/monB.err" || fail "monitor B printed no token"
token=$(sed -n 's/.*token \([0-9a-f]\{32\}\).*/\1/p' "$root/monB.err" | head -n1)
grep -q token "$root/monA.err" && fail "monitor A (loopback) printed a token"

# live events while the job runs
sse "$A/api/events" 3 "$root/live.txt"
running=$(kill -0 "$job" 2> /dev/null && echo yes || echo no)
python3 - "$root/live.txt" "$running" << 'PY' && echo "ok: live events" || fail "live events"
import sys, json
ids = [int(l[4:]) for l in open(sys.argv[1]) if l.startswith("id: ")]
data = [json.loads(l[6:]) for l in open(sys.argv[1]) if l.startswith("data: ")]
print(f"live: {len(ids)} events in 3 s (job still running: {sys.argv[2]}), ids {ids[:1]}..{ids[-1:]}")
assert len(ids) > 0 and ids == sorted(set(ids)), "ids not strictly increasing"
assert all("kind" in d and "seq" in d for d in data)
PY

st=0
wait "$job" || st=$?
check "the job finished (status $st)" test "$st" = 0
state_done() { timeout 10 curl -s --max-time 5 "$A/api/state" | grep -q '"done":true'; }
wait_for 20 state_done || fail "/api/state never said done"

timeout 10 curl -s --max-time 5 "$A/api/state" > "$root/state.json" || true
python3 - "$root/state.json" "$root/wd/metrics.jsonl" "$TOTAL" << 'PY' && echo "ok: /api/state" || fail "/api/state"
import sys, json
s = json.load(open(sys.argv[1]))
iters = [json.loads(l)["iter"] for l in open(sys.argv[2]) if '"kind":"train"' in l]
total = int(sys.argv[3])
p = s["progress"]
print(f"state: iter {p['iter']}/{p['total_iters']}, metrics.jsonl last train iter {max(iters)}; "
      f"{len(s['loaders'])} loaders, {len(s['workers'])} workers, phase {s['job']['phase']}")
assert p["iter"] == p["total_iters"] == total == max(iters)
assert s["job"]["done"] is True and p["eta_s"] == 0
assert s["loaders"] and all(l["host"] for l in s["loaders"])
assert s["workers"] and s["workers"][0]["device"] == "cpu"
evals = [json.loads(l) for l in open(sys.argv[2]) if '"kind":"eval"' in l]
h = s["eval"]["history"]
print("state: eval", [(e["iter"], round(e["psnr"], 4), round(e["psnr_bicubic"], 4)) for e in h],
      "; metrics.jsonl", [(e["iter"], round(e["psnr"], 4), round(e["psnr_bicubic"], 4)) for e in evals],
      "; checkpoint", s["checkpoint"])
assert len(evals) >= 3 and [e["iter"] for e in h] == [e["iter"] for e in evals]
assert all(abs(a["psnr"] - b["psnr"]) < 1e-6 and abs(a["psnr_bicubic"] - b["psnr_bicubic"]) < 1e-6
           for a, b in zip(h, evals))
assert s["checkpoint"].endswith("iter_%d.safetensors" % total)
PY

# the whole stream, then a reconnect from the middle
sse "$A/api/events" 2 "$root/all.txt"
n=$(grep -c '^id: ' "$root/all.txt" || true)
half=$((n / 2))
sse "$A/api/events" 2 "$root/resumed.txt" -H "Last-Event-ID: $half"
python3 - "$root/all.txt" "$root/resumed.txt" "$half" << 'PY' && echo "ok: events resume after Last-Event-ID" || fail "events resume"
import sys
def records(path):
    out, cur = [], {}
    for line in open(path).read().split("\n"):
        if not line:
            if cur: out.append(cur); cur = {}
        elif line.startswith(":"):
            continue
        else:
            k, _, v = line.partition(": "); cur[k] = v
    return out
all_, res, k = records(sys.argv[1]), records(sys.argv[2]), int(sys.argv[3])
ids = [int(r["id"]) for r in all_]
print(f"all: {len(ids)} events, ids 1..{ids[-1]}; resumed after {k}: {len(res)} events")
assert not any(r.get("event") == "gap" for r in all_), "a gap in a ring that holds everything"
assert ids == list(range(1, len(ids) + 1)), "ids not 1..N"
assert len(ids) > 20
want = [(r["id"], r["data"]) for r in all_ if int(r["id"]) > k]
got = [(r["id"], r["data"]) for r in res]
assert got == want, f"resumed {len(got)} events, want {len(want)} (ids {got[:1]} vs {want[:1]})"
PY

# B: the token, then a gap from id 0 in a ring of 16
check "B without a token: 401" test "$(code "$B/api/state")" = 401
check "B with a wrong token: 401" test "$(code "$B/api/state" -H "Authorization: Bearer 0123456789abcdef0123456789abcdef")" = 401
check "B with a wrong ?token=: 401" test "$(code "$B/api/state?token=x$token")" = 401
check "B with the Bearer token: 200" test "$(code "$B/api/state" -H "Authorization: Bearer $token")" = 200
check "B with ?token=: 200" test "$(code "$B/api/state?token=$token")" = 200
sse "$B/api/events?token=$token" 2 "$root/gap.txt" -H "Last-Event-ID: 0"
python3 - "$root/gap.txt" << 'PY' && echo "ok: gap event" || fail "gap event"
import sys, json
recs = [r for r in open(sys.argv[1]).read().split("\n\n") if r.strip() and not r.startswith(":")]
first = dict(l.split(": ", 1) for l in recs[0].split("\n"))
g = json.loads(first["data"])
ids = [int(dict(l.split(": ", 1) for l in r.split("\n"))["id"]) for r in recs[1:]]
print(f"gap: first record {first.get('event')} {g}, then {len(ids)} events {ids[:1]}..{ids[-1:]}")
assert first.get("event") == "gap" and g["first"] == 1
assert len(ids) == 16 and ids == list(range(g["last"] + 1, g["last"] + 17)), "not the 16 after the gap"
PY

sse "$B/api/events?token=$token" 2 "$root/reset.txt" -H "Last-Event-ID: 99999999"
python3 - "$root/reset.txt" << 'PY' && echo "ok: reset event" || fail "reset event"
import sys, json
recs = [dict(l.split(": ", 1) for l in r.split("\n"))
        for r in open(sys.argv[1]).read().split("\n\n") if r.strip() and not r.startswith(":")]
print("reset: records", [(r.get("event", "message"), r.get("id")) for r in recs[:3]], "...")
assert recs[0].get("event") == "reset" and json.loads(recs[0]["data"])["last_event_id"] == 99999999
assert recs[1].get("event") == "gap" and json.loads(recs[1]["data"])["first"] == 1
assert len(recs) == 18 and int(recs[-1]["id"]) == json.loads(recs[0]["data"])["last_id"]
PY

# curves against metrics.jsonl
timeout 10 curl -s --max-time 5 "$A/api/curves?name=loss&width=10" > "$root/curve.json" || true
python3 - "$root/curve.json" "$root/wd/metrics.jsonl" << 'PY' && echo "ok: /api/curves" || fail "/api/curves"
import sys, json
c = json.load(open(sys.argv[1]))
loss = {}
for l in open(sys.argv[2]):
    if '"kind":"train"' in l:
        o = json.loads(l); loss[o["iter"]] = o["loss"]
print(f"curves: {c['points']} points of {c['held']} for width 10; x {c['x'][0]}..{c['x'][-1]}; "
      f"y {min(c['y']):.6g}..{max(c['y']):.6g}; metrics.jsonl {min(loss.values()):.6g}..{max(loss.values()):.6g}")
assert c["points"] <= 22 and c["held"] == len(loss)
assert c["x"][0] == min(loss) and c["x"][-1] == max(loss)
rel = lambda a, b: abs(a - b) <= 1e-6 * max(1.0, abs(b))
assert rel(max(c["y"]), max(loss.values())) and rel(min(c["y"]), min(loss.values()))
assert all(rel(y, loss[int(x)]) for x, y in zip(c["x"], c["y"])), "a point not on the raw series"
PY
timeout 10 curl -s --max-time 5 "$A/api/curves?name=psnr" > "$root/psnr.json" || true
python3 - "$root/psnr.json" "$root/wd/metrics.jsonl" << 'PY' && echo "ok: /api/curves psnr" || fail "/api/curves psnr"
import sys, json
c = json.load(open(sys.argv[1]))
evals = [json.loads(l) for l in open(sys.argv[2]) if '"kind":"eval"' in l]
print(f"curves: psnr x {c['x']} y {[round(v, 4) for v in c['y']]}")
assert c["x"] == [e["iter"] for e in evals]
assert all(abs(a - e["psnr"]) < 1e-6 for a, e in zip(c["y"], evals))
PY
check "curves: unknown name 400" test "$(code "$A/api/curves?name=nope")" = 400
check "curves: width 0 400" test "$(code "$A/api/curves?name=loss&width=0")" = 400

# bad requests, then the server still answers
c=$(code "$A/../etc/passwd" --path-as-is)
check "/../etc/passwd: 4xx ($c)" test "${c:0:1}" = 4
check "unknown path: 404" test "$(code "$A/api/nope")" = 404
check "POST: 405" test "$(code "$A/api/state" -X POST -d x=1)" = 405
check "DELETE: 405" test "$(code "$A/api/state" -X DELETE)" = 405
# curl sees the reset of a server that answers before reading 1 MiB: a raw socket reads the
# answer (up to 3 tries, for a reset that beats the read)
python3 - "$pa" << 'PY' && echo "ok: a 1 MiB header: 431" || fail "a 1 MiB header"
import sys, socket
seen = []
for attempt in range(3):
    s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
    try:
        s.sendall(b"GET /api/state HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * (1 << 20) + b"\r\n\r\n")
    except OSError:
        pass
    try:
        head = s.recv(64)
    except OSError as e:
        head = str(e).encode()
    s.close()
    seen.append(head[:40])
    if head.startswith(b"HTTP/1.1 4"):
        break
print("1 MiB header: answers", seen)
assert seen[-1].startswith(b"HTTP/1.1 4")
PY
python3 - "$pa" << 'PY' && echo "ok: 1000 garbage requests answered 4xx or closed" || fail "garbage requests"
import sys, socket, random
random.seed(36)
port, statuses = int(sys.argv[1]), {}
for i in range(1000):
    kind = i % 6
    if kind == 0: req = bytes(random.getrandbits(8) for _ in range(random.randint(1, 400))) + b"\r\n\r\n"
    elif kind == 1: req = b"GET /api/state HTTP/9.9\r\n\r\n"
    elif kind == 2: req = b"GET " + b"/" * 70000 + b" HTTP/1.1\r\nHost: x\r\n\r\n"
    elif kind == 3: req = b"GET /api/state HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\nBad header line\r\n\r\n"
    elif kind == 4: req = (b"GET /files/" + random.choice([b"../", b"%2e%2e/", b"..%2f", b"/etc/", b"%00", b"a/../../"]) * random.randint(1, 8)
                           + b"passwd HTTP/1.1\r\nHost: x\r\n\r\n")
    else: req = b"GET /api/image?kind=eval&step=" + bytes(random.choice(b"-x9%\x01") for _ in range(random.randint(1, 30))) + b"&name=../x HTTP/1.1\r\nHost: x\r\n\r\n"
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    try:
        s.sendall(req)
        s.shutdown(socket.SHUT_WR)
        head = s.recv(64)
    except OSError:
        head = b""
    s.close()
    st = head.split(b" ")[1].decode() if head.startswith(b"HTTP/") else "closed"
    statuses[st] = statuses.get(st, 0) + 1
print("garbage: statuses", statuses)
assert all(k == "closed" or k.startswith("4") or k == "505" for k in statuses), statuses
PY
check "after all that, /api/state: 200" test "$(code "$A/api/state")" = 200

# B allows 2 requests at once: two open streams, the third gets 503, then 200 again
sse "$B/api/events?token=$token" 4 /dev/null &
s1=$!
sse "$B/api/events?token=$token" 4 /dev/null &
s2=$!
sleep 1.5
check "a third client while 2 streams are open: 503" test "$(code "$B/api/state?token=$token")" = 503
wait "$s1" "$s2" || true
b_ok() { test "$(code "$B/api/state?token=$token")" = 200; }
t0=$SECONDS
wait_for 3 b_ok || fail "no 200 within 3 s after the two streams closed"
echo "ok: after they closed, 200 again (within $((SECONDS - t0)) s)"

# images and files, from monitor A (which learnt the work_dir from the job)
ln -s "$root/cfg.yaml" "$root/wd/escape.png"                 # a symlink out of wd
ln -s ../cfg.yaml "$root/wd/escape_rel.png"
mkdir -p "$root/wd/folder.png"
check_images() {  # BASE_URL WORK_DIR GRIDS_DIR [QUERY]: /api/images and images against the files
    python3 - "$1" "$2" "$3" "${4:-}" << 'PY'
import sys, os, json, urllib.request, urllib.error
base, wd, grids, q = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
def get(path):
    try:
        with urllib.request.urlopen(base + path, timeout=10) as r:
            return r.status, r.headers.get("Content-Type"), r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type"), e.read()
amp = "&" + q if q else ""
st, ct, body = get("/api/images" + ("?" + q if q else ""))
assert st == 200 and ct == "application/json", (st, ct)
got = json.loads(body)
vis = sorted(int(f[5:-4]) for f in os.listdir(grids)
             if f.startswith("iter_") and f.endswith(".png"))
ev_root = os.path.join(wd, "eval_visuals")
ev = []
for d in sorted((d for d in os.listdir(ev_root) if d.startswith("iter_")), key=lambda d: int(d[5:])):
    names = sorted(f for f in os.listdir(os.path.join(ev_root, d)) if f.endswith(".png"))
    ev.append({"step": int(d[5:]), "images": names})
print(f"images: visual steps {got['visuals']['steps']} (on disk {vis}); eval "
      f"{[(e['step'], len(e['images'])) for e in got['eval']]} (on disk {[(e['step'], len(e['images'])) for e in ev]})")
assert vis and got["visuals"]["steps"] == vis
assert ev and got["eval"] == ev
refs = [k for k in ("bicubic", "gt") if os.path.isdir(os.path.join(ev_root, k))]
assert refs == ["bicubic", "gt"] and got["references"] == refs, (got["references"], refs)
step = vis[-1]
want = open(os.path.join(grids, f"iter_{step}.png"), "rb").read()
st, ct, body = get(f"/api/image?kind=visual&step={step}{amp}")
assert st == 200 and ct == "image/png" and body == want, (st, ct, len(body), len(want))
e = ev[0]
want = open(os.path.join(ev_root, f"iter_{e['step']}", e["images"][0]), "rb").read()
for path in (f"/api/image?kind=eval&step={e['step']}&name={e['images'][0]}{amp}",
             f"/files/eval_visuals/iter_{e['step']}/{e['images'][0]}" + ("?" + q if q else "")):
    st, ct, body = get(path)
    assert st == 200 and ct == "image/png" and body == want and body[:4] == b"\x89PNG", (path, st, ct)
print(f"images: visual grid of step {step} ({len(want)} B) and eval image "
      f"{e['images'][0]} of step {e['step']}: the bytes on disk, image/png")
PY
}
check_images "$A" "$root/wd" "$root/grids" && echo "ok: /api/images and images by step" || fail "images by step"
# B was given --work-dir (with a trailing slash): its run is named wd, its files are wd's, and
# its grids are WORK_DIR/visuals (output_dir is the job's host's; --work-dir replaces both)
python3 - "$B" "$token" "$root/wd" << 'PY' && echo "ok: --work-dir" || fail "--work-dir"
import sys, json, urllib.request
base, token, wd = sys.argv[1], sys.argv[2], sys.argv[3]
get = lambda p: urllib.request.urlopen(base + p + ("&" if "?" in p else "?") + "token=" + token, timeout=10).read()
runs = json.loads(get("/api/runs"))["runs"]
print("B runs:", runs)
assert [(r["name"], r["work_dir"]) for r in runs] == [("wd", wd + "/")]
assert get("/files/config.yaml") == open(wd + "/config.yaml", "rb").read()
imgs = json.loads(get("/api/images"))
assert imgs["visuals"]["steps"] == [] and [e["step"] for e in imgs["eval"]] == [1000, 2000, 3000, 4000]
PY
python3 - "$A" "$root/wd" << 'PY' && echo "ok: /files/ types and refusals" || fail "/files/ types and refusals"
import sys, os, socket
port = int(sys.argv[1].rsplit(":", 1)[1])
wd = sys.argv[2]
def raw(path):  # the path exactly as given (no client normalisation); status, headers, body
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(b"GET " + path.encode() + b" HTTP/1.0\r\nHost: x\r\n\r\n")
    data = b""
    while True:
        b = s.recv(65536)
        if not b: break
        data += b
    s.close()
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    hdr = {k.lower(): v.strip() for k, _, v in (l.partition(":") for l in lines[1:])}
    return int(lines[0].split()[1]), hdr.get("content-type"), body
ok = {
    "/files/metrics.jsonl": ("application/json", "metrics.jsonl"),
    "/files/train.log": ("text/plain; charset=utf-8", "train.log"),
    "/files/config.yaml": ("text/plain; charset=utf-8", "config.yaml"),
    "/files/escape_inside.png": ("image/png", "eval_visuals/iter_1000/gray.png"),
}
os.symlink("eval_visuals/iter_1000/gray.png", os.path.join(wd, "escape_inside.png"))
for path, (ct, rel) in ok.items():
    st, got_ct, body = raw(path)
    want = open(os.path.join(wd, rel), "rb").read()
    # metrics.jsonl and train.log no longer grow: the job has ended
    assert st == 200 and got_ct == ct and body == want, (path, st, got_ct, len(body), len(want))
bad = {
    "/files/../cfg.yaml": 400, "/files/visuals/../../cfg.yaml": 400,
    "/files/%2e%2e/cfg.yaml": 400, "/files/%2E%2E%2Fcfg.yaml": 400, "/files/..%2fcfg.yaml": 400,
    "/files/%252e%252e/cfg.yaml": 400, "/files//etc/passwd": 400, "/files/%2Fetc%2Fpasswd": 400,
    "/files/metrics.jsonl%00.png": 400, "/files/visuals\\..\\..\\cfg.yaml": 400,
    "/files/escape.png": 403, "/files/escape_rel.png": 403, "/files/folder.png": 403,
    "/files/checkpoints/iter_4000.safetensors": 404, "/files/visuals/iter_1000.png": 404,
    "/files/../grids/iter_1000.png": 400,
    "/files/visuals": 404,
    "/api/image?kind=eval&step=1000&name=../../../cfg.yaml": 400,
    "/api/image?kind=eval&step=1000&name=%2e%2e/%2e%2e/%2e%2e/cfg.yaml": 400,
    "/api/image?kind=eval&step=1000&name=/etc/passwd": 400,
    "/api/image?kind=visual&step=-1": 400, "/api/image?kind=visual&step=1e3": 400,
    "/api/image?kind=visual&step=7": 404, "/api/image?kind=nope&step=1000": 400,
    "/api/images?run=5": 404,
}
seen = {}
for path, want in bad.items():
    st, ct, body = raw(path)
    seen[path] = st
    assert st == want, (path, st, want, body[:100])
    assert b"root:" not in body and b"model:" not in body, path
print(f"files: {len(ok)} served with their types and bytes; {len(bad)} refused as expected "
      f"({sorted(set(seen.values()))})")
PY

# SIGTERM ends both
kill -TERM "$monA" "$monB"
sa=0; sb=0
wait "$monA" || sa=$?
wait "$monB" || sb=$?
check "SIGTERM: monitors exit 0 (A $sa, B $sb)" test "$sa" = 0 -a "$sb" = 0

# finished runs: wd and wd2 (a copy whose metrics.jsonl keeps its first half)
rm -f "$root/wd/escape.png" "$root/wd/escape_rel.png" "$root/wd/escape_inside.png"
rmdir "$root/wd/folder.png"
cp -r "$root/wd" "$root/wd2"
lines=$(wc -l < "$root/wd/metrics.jsonl")
head -n $((lines / 2)) "$root/wd/metrics.jsonl" > "$root/wd2/metrics.jsonl"
pc=$(free_port)
C=http://127.0.0.1:$pc
timeout 100 "$bin" monitor --http "127.0.0.1:$pc" "$root/wd" "$root/wd2" > "$root/monC.out" \
    2> "$root/monC.err" &
monC=$!
pids+=("$monC")
c_up() { test "$(code "$C/api/runs")" = 200; }
wait_for 20 c_up || fail "the finished-runs monitor did not answer"
python3 - "$C" "$root/wd" "$root/wd2" "$TOTAL" << 'PY' && echo "ok: finished runs" || fail "finished runs"
import sys, json, urllib.request, urllib.error
base, wds, total = sys.argv[1], sys.argv[2:4], int(sys.argv[4])
def get(path):
    with urllib.request.urlopen(base + path, timeout=10) as r:
        assert r.headers.get("Content-Type") == "application/json"
        return json.loads(r.read())
runs = get("/api/runs")["runs"]
print("runs:", [(r["index"], r["name"]) for r in runs])
assert [(r["index"], r["name"], r["work_dir"]) for r in runs] == [(0, "wd", wds[0]), (1, "wd2", wds[1])]
for i, wd in enumerate(wds):
    lines = [json.loads(l) for l in open(wd + "/metrics.jsonl")]
    train = [(l["iter"], l["loss"]) for l in lines if l["kind"] == "train"]
    evals = [l for l in lines if l["kind"] == "eval"]
    done = (any(l["kind"] == "done" and l["source"] == "coordinator" for l in lines)
            or max(t[0] for t in train) >= total)
    for sel in (str(i), "wd2" if i else "wd"):
        s = get(f"/api/state?run={sel}")
        p = s["progress"]
        h = s["eval"]["history"]
        assert p["iter"] == max(t[0] for t in train), (p["iter"], max(t[0] for t in train))
        assert p["total_iters"] == total and s["job"]["done"] == done
        assert abs(p["loss"] - train[-1][1]) <= 1e-9 * max(1, abs(train[-1][1]))
        assert [e["iter"] for e in h] == [e["iter"] for e in evals]
        assert all(abs(a["psnr"] - b["psnr"]) < 1e-6 and abs(a["ssim"] - b["ssim"]) < 1e-9
                   for a, b in zip(h, evals))
        c = get(f"/api/curves?name=loss&width=100000&run={sel}")
        assert c["held"] == len(train) and c["x"] == [t[0] for t in train], (c["held"], len(train))
        assert all(abs(y - t[1]) <= 1e-6 * max(1, abs(t[1])) for y, t in zip(c["y"], train))
        c = get(f"/api/curves?name=psnr&run={sel}")
        assert c["x"] == [e["iter"] for e in evals]
    print(f"run {i} ({wd.rsplit('/', 1)[1]}): iter {p['iter']}/{p['total_iters']}, done {done}, "
          f"{len(train)} loss points, eval at {[e['iter'] for e in evals]}: as metrics.jsonl says")
assert len(train) < sum(1 for l in open(wds[0] + "/metrics.jsonl") if '"kind":"train"' in l)
assert get("/api/state?run=0")["job"]["done"] and not get("/api/state?run=1")["job"]["done"]
try:
    urllib.request.urlopen(base + "/api/state?run=2", timeout=10)
    raise AssertionError("run 2 answered")
except urllib.error.HTTPError as e:
    assert e.code == 404
PY
check_images "$C" "$root/wd2" "$root/grids" "run=1" && echo "ok: finished run 1's images" || fail "finished run's images"
kill -TERM "$monC"
sc=0
wait "$monC" || sc=$?
check "SIGTERM: the finished-runs monitor exits 0 ($sc)" test "$sc" = 0
echo "e2e_monitor_http: $fails failed"
[ "$fails" = 0 ]
