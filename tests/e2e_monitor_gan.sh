#!/usr/bin/env bash
# e2e_monitor_gan — a GAN job's terms (docs/gan.md: l_g_pix ... out_d_fake, the train events'
# gan_terms) in `pixflow monitor --http` and its dashboard, from finished runs (no job: fast).
# Two work_dirs with a metrics.jsonl written here, as the log hook writes it: GAN has 6
# iterations whose train lines carry the discriminator's terms at every iteration and the
# generator's (no l_g_style: its weight is 0) at the even ones, with values made up here;
# PLAIN has the same lines without any term (a non-GAN job). Checked with python3:
#   - /api/curves?name=TERM (width 100000: every point) of GAN: exactly the steps and values
#     written, for each of the 8 terms (l_g_style and, for PLAIN, all of them: empty);
#   - /api/state's progress.gan: each term's latest value written (PLAIN: no `gan`);
#   - an unknown curve name: 400 naming the GAN terms among the accepted ones;
#   - with Chromium (tests/cdp.py): the page of GAN shows the "GAN terms" section, each chart
#     drew the union of its curves' steps (generator 2, 4, 6; discriminator 1..6) with the
#     values written; the page of PLAIN keeps the section hidden.
# Needs curl and python3 (77 without them); the browser part is skipped without Chromium.
set -u
src=${PF_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
for p in curl python3; do
    command -v "$p" > /dev/null || { echo "SKIP: $p not found"; exit 77; }
done
fails=0
root=$(mktemp -d "${TMPDIR:-/tmp}/pf-mongan.XXXXXX")
pids=()
# shellcheck source=tests/lib_e2e.sh
. "$src/tests/lib_e2e.sh"  # bin, fail, check, cleanup_pids, free_port, wait_for
trap cleanup_pids EXIT

mkdir -p "$root/gan" "$root/plain"
python3 - "$root" << 'EOF'
import json, sys
root = sys.argv[1]
for name, gan in (("gan", True), ("plain", False)):
    with open("%s/%s/metrics.jsonl" % (root, name), "w") as f:
        for it in range(1, 7):
            o = {"kind": "train", "source": "log", "time_stamp": "2026-01-01 00:00:00",
                 "iter": it, "epoch": 0, "lr": 1e-4, "loss": 1.0 / it, "time": 0.5,
                 "data_time": 0.01, "n": 1, "skipped": 0}
            if gan:
                if it % 2 == 0:
                    o.update(l_g_pix=0.25 / it, l_g_percep=1.5 + it, l_g_gan=0.0625 * it)
                o.update(l_d_real=0.7 - 0.01 * it, l_d_fake=0.6 + 0.01 * it,
                         out_d_real=-0.03 * it, out_d_fake=0.125 - it)
            f.write(json.dumps(o) + "\n")
EOF

port=$(free_port)
timeout 120 "$bin" monitor --http "127.0.0.1:$port" "$root/gan" "$root/plain" \
    > "$root/mon.out" 2> "$root/mon.err" &
pids+=("$!")
wait_for 20 grep -q 'served until' "$root/mon.err" || fail "the finished-runs monitor did not start"
url="http://127.0.0.1:$port"

check "curves and state of the GAN terms" timeout 60 python3 - "$url" << 'EOF'
import json, sys, urllib.error, urllib.request
url = sys.argv[1]
TERMS = ["l_g_pix", "l_g_percep", "l_g_style", "l_g_gan", "l_d_real", "l_d_fake",
         "out_d_real", "out_d_fake"]
def want(term, it):         # the values written above, None where the line has none
    g = it % 2 == 0
    return {"l_g_pix": 0.25 / it if g else None, "l_g_percep": 1.5 + it if g else None,
            "l_g_style": None, "l_g_gan": 0.0625 * it if g else None,
            "l_d_real": 0.7 - 0.01 * it, "l_d_fake": 0.6 + 0.01 * it,
            "out_d_real": -0.03 * it, "out_d_fake": 0.125 - it}[term]
def get(path):
    with urllib.request.urlopen(url + path, timeout=5) as r:
        return json.load(r)
bad = 0
def check(what, ok, detail=""):
    global bad
    print(("ok: " if ok else "FAIL: ") + what + ("" if ok else " (%s)" % detail))
    bad += not ok
for run in ("gan", "plain"):
    for t in TERMS:
        c = get("/api/curves?name=%s&width=100000&run=%s" % (t, run))
        pts = [(it, want(t, it)) for it in range(1, 7)] if run == "gan" else []
        pts = [(x, y) for x, y in pts if y is not None]
        check("%s: curve %s = the values written" % (run, t),
              c["x"] == [x for x, _ in pts] and
              all(abs(a - b) <= 1e-8 * max(1, abs(b)) for a, (_, b) in zip(c["y"], pts)) and
              len(c["y"]) == len(pts), "got %s %s" % (c["x"], c["y"]))
    p = get("/api/state?run=%s" % run)["progress"]
    if run == "gan":
        g = p.get("gan", {})
        last = {t: want(t, 6) for t in TERMS if want(t, 6) is not None}
        check("gan: progress.gan holds each term's latest value",
              set(g) == set(last) and all(abs(g[t] - last[t]) <= 1e-8 for t in last), str(g))
    else:
        check("plain: no progress.gan", "gan" not in p, str(p))
try:
    urllib.request.urlopen(url + "/api/curves?name=l_g_bogus", timeout=5)
    check("unknown curve refused", False, "200")
except urllib.error.HTTPError as e:
    body = e.read().decode()
    check("unknown curve refused, naming the GAN terms", e.code == 400 and "out_d_fake" in body,
          "%d %s" % (e.code, body))
sys.exit(1 if bad else 0)
EOF

if python3 -c "import sys; sys.path.insert(0, '$src/tests'); import cdp; sys.exit(0 if cdp.find_chromium() else 1)"; then
    check "the dashboard's GAN charts" timeout 90 python3 - "$url" "$src/tests" << 'EOF'
import json, sys
sys.path.insert(0, sys.argv[2])
import cdp
url = sys.argv[1]
bad = 0
def check(what, ok, detail=""):
    global bad
    print(("ok: " if ok else "FAIL: ") + what + ("" if ok else " (%s)" % detail))
    bad += not ok
G = "l_g_pix,l_g_percep,l_g_style,l_g_gan"
D = "l_d_real,l_d_fake,out_d_real,out_d_fake"
with cdp.Browser(width=1400, height=1500) as b:
    page = b.new_page()
    page.goto(url + "/?run=gan")
    page.wait("window.pixflow && window.pixflow.curvesLoaded", 20)
    shown = page.wait("(function (s) { return s && !s.hidden && window.pixflow.curves['%s'] && "
                      "window.pixflow.curves['%s']; })(document.getElementById('pf-gan-curves'))"
                      % (G, D), 20)
    check("gan: the GAN terms section is shown", bool(shown))
    # the generator's terms exist at the even steps only: their chart's steps are 2, 4, 6
    for name, steps in ((G, [2, 4, 6]), (D, [1, 2, 3, 4, 5, 6])):
        data = json.loads(page.eval("JSON.stringify(uplotSeries('%s'))" % name) or "null")
        check("gan: chart %s drew steps %s in 4 series" % (name, steps),
              data is not None and data[0] == steps and len(data) == 5, str(data))
        if data and name == D:
            check("gan: out_d_fake's series is the values written",
                  all(abs(y - (0.125 - x)) < 1e-8 for x, y in zip(data[0], data[4])), str(data[4]))
        if data and name == G:
            check("gan: l_g_pix's series is the values written, l_g_style's empty",
                  all(abs(y - 0.25 / x) < 1e-8 for x, y in zip(data[0], data[1])) and
                  data[3] == [None] * 3, str(data))
    page = b.new_page()
    page.goto(url + "/?run=plain")
    loaded = page.wait("window.pixflow && window.pixflow.curvesLoaded", 20)
    hidden = page.eval("document.getElementById('pf-gan-curves').hidden")
    check("plain: the GAN terms section stays hidden", bool(loaded) and hidden is True,
          "loaded %s hidden %s" % (loaded, hidden))
sys.exit(1 if bad else 0)
EOF
else
    echo "no chromium: the dashboard part is skipped"
fi
echo "e2e_monitor_gan: $fails failed"
[ "$fails" = 0 ]
