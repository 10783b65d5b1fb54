#!/usr/bin/env python3
"""page_load.py BUILD [--iters N] [--loads N] [--stay S] — issue 37's bar for the dashboard page:
"a 100k-iteration run's page is interactive in under 1 s (measured in Chromium: from navigation
to the curves drawn), and stays under 100 MB of JS heap". Run by bench/dashboard/run.sh, which
adds the machine and writes bench/results/.

1. bench/dashboard/make_run.py writes a finished run of N iterations (a train line each, spikes,
   an eval every 5000) to a temporary work_dir; `BUILD/pixflow monitor --http 127.0.0.1:PORT
   WORK_DIR` serves it (under `timeout`). The page is opened only once /api/state says the
   whole run is loaded (the monitor reads metrics.jsonl after it starts answering); that load
   time is printed, not counted.
2. LOADS times, each in a fresh headless Chromium (tests/cdp.py; new profile, so nothing is
   cached) and a fresh page: navigate to /, poll every 20 ms (--poll) for
   window.pixflow.curvesAt, which web/app.js sets to performance.now() (ms since the
   navigation started) when every chart has drawn its curve the first time. Also read: the first animation frame that starts after it
   (a script injected before the page's own, a requestAnimationFrame loop: the frame that puts
   the drawn charts on screen), DOMContentLoaded and load from the navigation timing entry, and
   the wall time the harness saw from Page.navigate to its poll seeing curvesAt (an upper bound:
   it includes the DevTools round trips and up to one poll interval). And the renderer's CPU
   time from navigation to curves drawn (Performance.getMetrics ThreadTime, main thread, and
   ProcessTime): what the page costs, apart from how long a busy machine made it wait.
3. JS heap: Runtime.getHeapUsage (the page's V8 heap, used and total bytes, no garbage
   collection forced) right after the curves are drawn and again after STAY seconds on the page
   (its snapshot poll every second and its event stream go on meanwhile).
4. Checks (each load): every chart drew exactly the points the server sent (points == drawn),
   the drawn series equal /api/curves fetched here at the chart's width, and the loss chart's
   maximum equals the largest loss in metrics.jsonl (the decimation kept the spikes).

Bars: every load's curvesAt < 1000 ms, every heap reading < 100 MB (10^6 bytes). Exit 0 when
all checks passed (a missed bar is reported as FAIL in the summary but is not an exit status:
the numbers are the result), 1 when a check failed, 77 without chromium."""
import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests"))
import cdp  # noqa: E402

CHARTS = ("loss", "psnr", "lr", "it_per_s", "data_wait")
BAR_MS = 1000.0
BAR_HEAP = 100e6

# Before the page's own scripts: record the start of the first frame after the curves are drawn.
FRAME_JS = """(function () {
  function f() {
    var p = window.pixflow;
    if (p && p.curvesAt) { window.__pfFrameAfterCurves = performance.now(); return; }
    requestAnimationFrame(f);
  }
  requestAnimationFrame(f);
})();"""

fails = 0


def check(what, ok, detail=""):
    global fails
    print(("ok: " if ok else "FAIL: ") + what + (" (%s)" % detail if detail else ""), flush=True)
    if not ok:
        fails += 1


def get_json(url):
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.load(r)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def serve(build, wd, iters, limit_s):
    """Start the monitor on the finished run; returns (process, url, seconds until loaded)."""
    port = free_port()
    url = "http://127.0.0.1:%d" % port
    log = open(os.path.join(wd, "..", "monitor.log"), "wb")
    t0 = time.monotonic()
    proc = subprocess.Popen(["timeout", str(limit_s), os.path.join(build, "pixflow"), "monitor",
                             "--http", "127.0.0.1:%d" % port, wd], stdout=log, stderr=log)
    while time.monotonic() - t0 < 60:
        if proc.poll() is not None:
            raise SystemExit("the monitor exited (%s): %s" % (proc.returncode, open(
                log.name).read()))
        try:
            st = get_json(url + "/api/state")
            loss = get_json(url + "/api/curves?name=loss&width=100")
            if st.get("progress", {}).get("iter") == iters and loss.get("added") == iters:
                return proc, url, time.monotonic() - t0
        except (OSError, ValueError):
            pass
        time.sleep(0.05)
    proc.terminate()
    raise SystemExit("the monitor did not load the run within 60 s")


def metrics(page):
    """Performance.getMetrics as a dict; ThreadTime and ProcessTime are the renderer's main
    thread and whole process CPU seconds, which a busy machine slows but does not inflate."""
    return {m["name"]: m["value"] for m in page.send("Performance.getMetrics")["metrics"]}


def heap(page):
    h = page.send("Runtime.getHeapUsage")
    return h["usedSize"], h["totalSize"]


def load_once(url, max_loss, stay_s, k, poll_s):
    """One fresh browser, one page: returns the numbers of this load."""
    r = {"loadavg": os.getloadavg()[0]}     # the VM is shared: how busy it was
    with cdp.Browser(width=1400, height=1500, timeout=60) as b:
        page = b.new_page()
        page.send("Page.addScriptToEvaluateOnNewDocument", {"source": FRAME_JS})
        page.send("Performance.enable")
        before = metrics(page)
        t0 = time.monotonic()
        page.goto(url + "/")
        at = None
        while time.monotonic() - t0 < 30:
            at = page.eval("window.pixflow && window.pixflow.curvesAt || 0")
            if at:
                break
            time.sleep(poll_s)
        r["wall_ms"] = (time.monotonic() - t0) * 1000
        check("load %d: curves drawn" % k, bool(at), "curvesAt %s ms" % at)
        if not at:
            return None
        r["curves_ms"] = at
        r["frame_ms"] = page.wait("window.__pfFrameAfterCurves", 2, poll=0.02) or float("nan")
        nav = page.eval("JSON.stringify(performance.getEntriesByType('navigation')[0])")
        nav = json.loads(nav) if nav else {}
        r["dcl_ms"] = nav.get("domContentLoadedEventEnd", float("nan"))
        r["load_ms"] = nav.get("loadEventEnd", float("nan"))
        r["heap_used"], r["heap_total"] = heap(page)
        after = metrics(page)
        r["cpu_ms"] = 1000 * (after.get("ThreadTime", 0) - before.get("ThreadTime", 0))
        r["proc_cpu_ms"] = 1000 * (after.get("ProcessTime", 0) - before.get("ProcessTime", 0))
        # where the time went: the document's response, then each resource's start..end
        res = json.loads(page.eval(
            "JSON.stringify(performance.getEntriesByType('resource').map(function (e) {"
            " return [e.name.replace(location.origin, '').replace(/\\?.*/, '')"
            " + (e.name.indexOf('name=') > 0 ? ':' + e.name.split('name=')[1].split('&')[0] : ''),"
            " Math.round(e.startTime), Math.round(e.responseEnd)]; }))"))
        r["timeline"] = "document %.0f..%.0f; " % (nav.get("requestStart", float("nan")),
                                                   nav.get("responseEnd", float("nan"))) + \
            ", ".join("%s %d..%d" % (n, s0, e0) for n, s0, e0 in res if s0 <= at)

        curves = json.loads(page.eval("JSON.stringify(window.pixflow.curves)"))
        for name in CHARTS:
            c = curves.get(name)
            ok = c is not None and c["points"] > 0 and c["drawn"] == c["points"]
            detail = c and "%d sent, %d drawn, width %d, %d held" % (
                c["points"], c["drawn"], c["width"], c["held"])
            if c:
                mine = get_json("%s/api/curves?name=%s&width=%d" % (url, name, c["width"]))
                drawn = json.loads(page.eval("JSON.stringify(uplotData('%s'))" % name))
                ok = ok and drawn == [mine["x"], mine["y"]] and mine["points"] == c["points"]
                if name == "loss":
                    top = max(drawn[1])
                    ok = ok and abs(top - max_loss) <= 1e-6 * max_loss
                    detail += ", max %.6g (metrics.jsonl %.6g)" % (top, max_loss)
            check("load %d: %s drew every point the server sent, equal to /api/curves" % (k, name),
                  ok, detail)
        r["points"] = {n: curves[n]["points"] for n in CHARTS if n in curves}

        if stay_s > 0:
            time.sleep(stay_s)
            r["heap_used_stay"], r["heap_total_stay"] = heap(page)
            snaps = page.eval("window.pixflow.snapshots")
            check("load %d: the page kept polling for %g s" % (k, stay_s),
                  snaps >= stay_s / 2, "%d snapshots" % snaps)
    return r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--iters", type=int, default=100000)
    ap.add_argument("--loads", type=int, default=5)
    ap.add_argument("--stay", type=float, default=30)
    ap.add_argument("--poll", type=float, default=0.02,
                    help="s between the harness's looks (curvesAt is the page's own clock)")
    ap.add_argument("--smoke", action="store_true", help="no bar lines: the checks only")
    a = ap.parse_args()
    if not cdp.find_chromium():
        print("page_load: no chromium (apt-get install chromium); skipped")
        sys.exit(77)
    root = tempfile.mkdtemp(prefix="pf-pagebench-")
    proc = None
    try:
        wd = os.path.join(root, "run100k")
        made = json.loads(subprocess.check_output(
            [sys.executable, os.path.join(HERE, "make_run.py"), wd, str(a.iters)]))
        size = os.path.getsize(os.path.join(wd, "metrics.jsonl"))
        print("run: %d train lines, %d lines in all, %.1f MB metrics.jsonl, %d evals, max loss %.6g"
              % (made["train_lines"], made["lines"], size / 1e6, made["evals"], made["max_loss"]))
        limit = int(60 + a.loads * (a.stay + 60))
        proc, url, loaded = serve(a.build, wd, a.iters, limit)
        print("monitor: serving %s, the whole run loaded %.2f s after it started (not counted)"
              % (url, loaded))
        rows = []
        for k in range(1, a.loads + 1):
            r = load_once(url, made["max_loss"], a.stay, k, a.poll)
            if r is None:
                continue
            rows.append(r)
            stay = (", after %g s %.1f / %.1f MB" % (a.stay, r["heap_used_stay"] / 1e6,
                                                      r["heap_total_stay"] / 1e6)
                    if a.stay > 0 else "")
            print("load %d (load average %.1f): curves drawn %.0f ms after navigation (next frame %.0f ms; "
                  "DOMContentLoaded %.0f, load %.0f; harness saw %.0f ms; renderer CPU by then: "
                  "main thread %.0f ms, process %.0f ms); JS heap used / total "
                  "%.1f / %.1f MB%s; points %s" % (
                      k, r["loadavg"], r["curves_ms"], r["frame_ms"], r["dcl_ms"], r["load_ms"],
                      r["wall_ms"], r["cpu_ms"], r["proc_cpu_ms"],
                      r["heap_used"] / 1e6, r["heap_total"] / 1e6, stay,
                      " ".join("%s %d" % kv for kv in r["points"].items())), flush=True)
            print("  load %d timeline (ms): %s" % (k, r["timeline"]), flush=True)
        if rows:
            def stat(key):
                v = [r[key] for r in rows]
                return statistics.median(v), max(v)
            cm, cx = stat("curves_ms")
            fm, fx = stat("frame_ms")
            wm, wx = stat("wall_ms")
            um, ux = stat("cpu_ms")
            heaps = [r["heap_used"] for r in rows] + [r.get("heap_used_stay", 0) for r in rows]
            totals = [r["heap_total"] for r in rows] + [r.get("heap_total_stay", 0) for r in rows]
            print("summary: %d loads of a %d-iteration run" % (len(rows), a.iters))
            print("  navigation -> curves drawn (page's performance.now()): median %.0f ms, "
                  "max %.0f ms; next frame: median %.0f, max %.0f; harness wall: median %.0f, "
                  "max %.0f" % (cm, cx, fm, fx, wm, wx))
            print("  renderer main-thread CPU from navigation to curves drawn: median %.0f ms, "
                  "max %.0f ms (what the page costs; the times above add the machine's queue)"
                  % (um, ux))
            print("  JS heap used: max %.1f MB (total allocated max %.1f MB) over %s" % (
                max(heaps) / 1e6, max(totals) / 1e6,
                "drawn and +%g s" % a.stay if a.stay > 0 else "drawn"))
        if rows and not a.smoke:
            print("  bar 'interactive in under 1 s': %s (max %.0f ms%s)" % (
                "PASS" if cx < BAR_MS else "FAIL", cx,
                "" if cx < BAR_MS else ", %.0f ms over" % (cx - BAR_MS)))
            print("  bar 'under 100 MB of JS heap': %s (max used %.1f MB)" % (
                "PASS" if max(heaps) < BAR_HEAP else "FAIL", max(heaps) / 1e6))
        check("every load measured", len(rows) == a.loads, "%d of %d" % (len(rows), a.loads))
    finally:
        if proc and proc.poll() is None:
            proc.terminate()
            proc.wait(timeout=10)
        shutil.rmtree(root, ignore_errors=True)
    print("page_load: %d checks failed" % fails)
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
