#!/usr/bin/env python3
"""dashboard_check.py URL SCREENSHOT WORK_DIR — the browser half of tests/e2e_dashboard.sh: opens the
dashboard of a running job at URL in headless Chromium (tests/cdp.py) and checks what a user
sees. Exit 0 when every check passed, 1 otherwise; one ok/FAIL line per check."""
import json
import os
import signal
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cdp  # noqa: E402

RUNS = sys.argv[1] == "--runs"      # dashboard_check.py --runs URL: the comparison of runs
if RUNS:
    url = sys.argv[2]
else:
    url, shot, work_dir = sys.argv[1], sys.argv[2], sys.argv[3]
fails = 0


def check(what, ok, detail=""):
    global fails
    print(("ok: " if ok else "FAIL: ") + what + (" (%s)" % detail if detail else ""))
    if not ok:
        fails += 1


def state():
    with urllib.request.urlopen(url + "/api/state", timeout=5) as r:
        return json.load(r)


# The pixels of the A/B canvas in column x (RGBA, top to bottom), and those of an image URL
# drawn alone at its natural size, same column: what the canvas must show on either side.
COLUMN = """(function (x) {
  var c = document.getElementById('pf-ab');
  return Array.from(c.getContext('2d').getImageData(x, 0, 1, c.height).data);
})(%d)"""
IMAGE_COLUMN = """new Promise(function (ok, fail) {
  var im = new Image();
  im.onload = function () {
    var c = document.createElement('canvas');
    c.width = im.naturalWidth; c.height = im.naturalHeight;
    var g = c.getContext('2d');
    g.drawImage(im, 0, 0);
    ok(Array.from(g.getImageData(%d, 0, 1, c.height).data));
  };
  im.onerror = function () { fail(new Error('cannot load ' + im.src)); };
  im.src = %s;
})"""


def images_check(page):
    ok = page.wait("window.pixflow.ab && window.pixflow.ab.painted > 0 && "
                   "window.pixflow.images && window.pixflow.images.evals >= 2", 30)
    check("images: the A/B view painted, two evaluations known", bool(ok),
          page.eval("JSON.stringify([window.pixflow.images, window.pixflow.ab])"))
    if not ok:
        return
    # the eval viewer lists the files of eval_visuals/iter_<step shown>
    label = page.eval("document.getElementById('pf-ab-label').textContent")
    step = int(label.split("iteration ")[1].split(" ")[0])
    names = json.loads(page.eval("JSON.stringify(window.pixflow.evalNames)"))
    on_disk = sorted(n for n in os.listdir(os.path.join(work_dir, "eval_visuals",
                                                        "iter_%d" % step)) if n.endswith(".png"))
    check("eval viewer lists eval_visuals/iter_%d" % step, names == on_disk,
          "page %s, folder %s" % (names, on_disk))
    # the A/B split: drag it from the middle to 20 % of the width
    page.eval("(function(){var z=document.getElementById('pf-zoom'); z.value='4';"
              "z.dispatchEvent(new Event('change'));"
              "document.getElementById('pf-ab').scrollIntoView();})()")
    ab = json.loads(page.eval("JSON.stringify(window.pixflow.ab)"))
    x = int(ab["width"] * 0.35)          # between the split before (0.5) and after (0.2)
    name = page.eval("document.getElementById('pf-eval-name').value")
    a_url = json.dumps("/api/image?kind=eval&step=%d&name=%s" % (step, name))
    b_url = json.dumps("/files/eval_visuals/bicubic/" + name)
    a_col = page.eval(IMAGE_COLUMN % (x, a_url))
    b_col = page.eval(IMAGE_COLUMN % (x, b_url))
    before = page.eval(COLUMN % x)
    r = json.loads(page.eval("JSON.stringify(document.getElementById('pf-ab')"
                             ".getBoundingClientRect())"))
    y = r["top"] + r["height"] / 2
    page.mouse("mousePressed", r["left"] + r["width"] * 0.5, y)
    page.mouse("mouseMoved", r["left"] + r["width"] * 0.3, y)
    page.mouse("mouseMoved", r["left"] + r["width"] * 0.2, y)
    page.mouse("mouseReleased", r["left"] + r["width"] * 0.2, y, buttons=0)
    after = page.eval(COLUMN % x)
    split = page.eval("window.pixflow.ab.split")
    check("A/B: the drag moved the split to ~0.2", abs(split - 0.2) < 0.05, "%.3f" % split)
    check("A/B: output and bicubic differ in column %d (else the check says nothing)" % x,
          a_col != b_col)
    check("A/B: column %d showed the output (A) before the drag" % x, before == a_col)
    check("A/B: column %d shows bicubic (B) after the drag" % x, after == b_col)
    # the step slider moves every panel: back to the first step
    first = page.eval("(function(){var s=document.getElementById('pf-step'); s.value=0;"
                      "s.dispatchEvent(new Event('input'));"
                      "return document.getElementById('pf-step-label').textContent;})()")
    vis = page.wait("document.getElementById('pf-visual').src.indexOf('step=1000') >= 0", 5)
    ab1 = page.wait("document.getElementById('pf-ab-label').textContent"
                    ".indexOf('iteration 1000 ') >= 0", 5)
    check("step slider at the first step moves both panels to iteration 1000",
          bool(vis) and bool(ab1), "%s; visual %s; eval %s" % (first, page.eval(
              "document.getElementById('pf-visual').src"), page.eval(
              "document.getElementById('pf-ab-label').textContent")))


def runs_check():
    with cdp.Browser(width=1400, height=1500) as b:
        page = b.new_page()
        page.goto(url + "/")
        ok = page.wait("window.pixflow && window.pixflow.runs === 2 && "
                       "window.pixflow.curvesLoaded", 20)
        check("two runs listed", bool(ok))
        page.eval("(function(){var bs=document.querySelectorAll('#pf-run-list input');"
                  "bs[1].checked=true; bs[1].dispatchEvent(new Event('change'));})()")
        both = page.wait("window.pixflow.curves.loss && window.pixflow.curves.loss.runs && "
                         "window.pixflow.curves.loss.runs.length === 2", 10)
        check("ticking the second run overlays two loss series", bool(both))
        c = json.loads(page.eval("JSON.stringify(window.pixflow.curves.loss)"))
        drawn = json.loads(page.eval("JSON.stringify(uplotSeries('loss'))"))
        for i in range(2):
            with urllib.request.urlopen("%s/api/curves?name=loss&width=%d&run=%d" %
                                        (url, c["width"], i), timeout=5) as r:
                mine = json.load(r)
            got = [(x, y) for x, y in zip(drawn[0], drawn[i + 1]) if y is not None]
            want = list(zip(mine["x"], mine["y"]))
            check("run %d's loss series drawn as the server sends it" % i, got == want,
                  "%d points drawn, %d sent" % (len(got), len(want)))
        imgs = page.wait("document.querySelectorAll('#pf-compare img').length === 2 && "
                         "Array.from(document.querySelectorAll('#pf-compare img'))"
                         ".every(function (i) { return i.complete && i.naturalWidth > 0; })", 10)
        check("the eval image of both runs side by side", bool(imgs))


if RUNS:
    runs_check()
    print("dashboard_check --runs: %d failed" % fails)
    sys.exit(1 if fails else 0)

with cdp.Browser(width=1400, height=1500) as b:
    page = b.new_page()
    t0 = time.monotonic()
    page.goto(url + "/")
    loaded = page.wait("window.pixflow && window.pixflow.curvesLoaded", 20)
    check("curves drawn", bool(loaded), "%.2f s after navigation" % (time.monotonic() - t0))
    curves = json.loads(page.eval("JSON.stringify(window.pixflow.curves)"))
    for name in ("loss", "lr", "it_per_s", "data_wait", "psnr"):
        c = curves.get(name)
        check("curve %s: drew every point the server sent" % name,
              c is not None and c["points"] > 0 and c["drawn"] == c["points"],
              c and "%d sent, %d drawn, %d added, width %d" %
              (c["points"], c["drawn"], c["added"], c["width"]))
        if c:
            check("curve %s: at most 2 points per pixel column + 2" % name,
                  c["points"] <= 2 * c["width"] + 2, "%d for %d px" % (c["points"], c["width"]))
    # the eval curve changes only every 1000 iterations: the page's drawn series equals the
    # server's answer fetched here at the same width
    c = curves.get("psnr")
    if c:
        with urllib.request.urlopen("%s/api/curves?name=psnr&width=%d" % (url, c["width"]),
                                    timeout=5) as r:
            mine = json.load(r)
        drawn = json.loads(page.eval("JSON.stringify(uplotData('psnr'))"))
        check("curve psnr: the page's series equals the server's", drawn == [mine["x"], mine["y"]],
              "page %s, server %s" % (drawn, [mine["x"], mine["y"]]))
    check("the event stream is open", bool(page.wait(
        "document.getElementById('pf-conn').textContent.startsWith('live')", 10)))
    first = int(page.eval("document.getElementById('pf-iter').textContent"))
    grown = page.wait("Number(document.getElementById('pf-iter').textContent) > %d" % first, 20)
    check("the snapshot follows the job", bool(grown),
          "iteration %d, then %s" % (first, page.eval(
              "document.getElementById('pf-iter').textContent")))
    check("events arrive", page.eval("window.pixflow.events") > 0,
          "%d events" % page.eval("window.pixflow.events"))

    # a loader killed with -9 shows dead within 5 s
    loaders = [r for r in state()["loaders"] if r.get("alive")]
    check("a live loader to kill", len(loaders) > 0)
    if loaders:
        victim = loaders[0]
        os.kill(int(victim["pid"]), signal.SIGKILL)
        t = time.monotonic()
        api_dead = None                 # GET /api/state first, then the page, both from t
        while api_dead is None and time.monotonic() - t < 5:
            if any(r["name"] == victim["name"] and not r["alive"] for r in state()["loaders"]):
                api_dead = time.monotonic() - t
            else:
                time.sleep(0.1)
        check("loader %s killed with -9: /api/state says not alive within 5 s" % victim["name"],
              api_dead is not None, "%.2f s" % api_dead if api_dead is not None else "")
        sel = "document.querySelector('#pf-loaders tr[data-name=\"%s\"]')" % victim["name"]
        dead = page.wait("%s && %s.dataset.alive === 'false'" % (sel, sel),
                         max(0.1, 5 - (time.monotonic() - t)), poll=0.1)
        check("loader %s killed with -9 shows dead in the page within 5 s" % victim["name"],
              bool(dead), "%.2f s; its state: %s" % (time.monotonic() - t, page.eval(
                  "%s && %s.querySelector('.state').textContent" % (sel, sel))))
    images_check(page)
    page.screenshot(shot)
    print("screenshot: " + shot)

print("dashboard_check: %d failed" % fails)
sys.exit(1 if fails else 0)
