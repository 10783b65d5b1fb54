#!/usr/bin/env python3
"""dashboard_check.py URL SCREENSHOT — the browser half of tests/e2e_dashboard.sh: opens the
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

url, shot = sys.argv[1], sys.argv[2]
fails = 0


def check(what, ok, detail=""):
    global fails
    print(("ok: " if ok else "FAIL: ") + what + (" (%s)" % detail if detail else ""))
    if not ok:
        fails += 1


def state():
    with urllib.request.urlopen(url + "/api/state", timeout=5) as r:
        return json.load(r)


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
        sel = "document.querySelector('#pf-loaders tr[data-name=\"%s\"]')" % victim["name"]
        dead = page.wait("%s && %s.dataset.alive === 'false'" % (sel, sel), 5, poll=0.1)
        check("loader %s killed with -9 shows dead in the page within 5 s" % victim["name"],
              bool(dead), "%.2f s; its state: %s" % (time.monotonic() - t, page.eval(
                  "%s && %s.querySelector('.state').textContent" % (sel, sel))))
    page.screenshot(shot)
    print("screenshot: " + shot)

print("dashboard_check: %d failed" % fails)
sys.exit(1 if fails else 0)
