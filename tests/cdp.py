"""cdp.py — a minimal Chrome DevTools Protocol client for the dashboard tests, Python stdlib only.

Chromium started with --remote-debugging-pipe reads protocol messages (JSON, each ended by a NUL
byte) on its fd 3 and writes replies and events on its fd 4: no WebSocket, so no Node or
puppeteer is needed. One page (a target attached with flatten=True); commands are synchronous
(send, then read until the reply with that id arrives; events met meanwhile are kept).

    with Browser() as b:            # raises Unavailable when no chromium is installed
        page = b.new_page()
        page.goto("http://127.0.0.1:8080/")
        page.eval("document.title")
"""
import json
import os
import shutil
import subprocess
import tempfile
import time


class Unavailable(Exception):
    pass


class Error(Exception):
    pass


def find_chromium():
    if os.access("/usr/lib/chromium/chromium", os.X_OK):     # Debian's, without its wrapper
        return "/usr/lib/chromium/chromium"
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


class Browser:
    def __init__(self, width=1400, height=1000, timeout=30.0):
        self.exe = find_chromium()
        if not self.exe:
            raise Unavailable("no chromium on PATH (apt-get install chromium)")
        self.width, self.height, self.timeout = width, height, timeout
        self.next_id = 0
        self.events = []
        self.buf = b""

    def __enter__(self):
        self.profile = tempfile.mkdtemp(prefix="pf-cdp-")
        to_chrome_r, self.to_chrome = os.pipe()
        self.from_chrome, from_chrome_w = os.pipe()

        def fds():                       # the child: commands on 3, replies on 4
            os.dup2(to_chrome_r, 3)
            os.dup2(from_chrome_w, 4)
        args = [self.exe, "--headless", "--remote-debugging-pipe", "--disable-gpu",
                "--no-first-run", "--no-default-browser-check", "--disable-extensions",
                "--disable-dev-shm-usage", "--hide-scrollbars", "--mute-audio",
                "--user-data-dir=" + self.profile,
                "--window-size=%d,%d" % (self.width, self.height)]
        if os.geteuid() == 0:
            args.append("--no-sandbox")      # Chromium refuses to run as root with its sandbox
        self.log = open(os.path.join(self.profile, "chromium.log"), "wb")
        self.proc = subprocess.Popen(args, preexec_fn=fds, pass_fds=(3, 4),
                                     stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        return self

    def __exit__(self, *exc):
        try:
            self.proc.kill()
            self.proc.wait(timeout=10)
        except Exception:
            pass
        for fd in (self.to_chrome, self.from_chrome):
            try:
                os.close(fd)
            except OSError:
                pass
        self.log.close()
        shutil.rmtree(self.profile, ignore_errors=True)

    def chromium_log(self):
        with open(os.path.join(self.profile, "chromium.log"), "rb") as f:
            return f.read().decode(errors="replace")[-2000:]

    def _read_message(self, deadline):
        import select
        while b"\0" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise Error("no answer from chromium within %.0f s" % self.timeout)
            r, _, _ = select.select([self.from_chrome], [], [], left)
            if not r:
                continue
            chunk = os.read(self.from_chrome, 1 << 20)
            if not chunk:
                raise Error("chromium closed the pipe (exit %s): %s" %
                            (self.proc.poll(), self.chromium_log()))
            self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def send(self, method, params=None, session=None, timeout=None):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        data = json.dumps(msg).encode() + b"\0"
        while data:
            n = os.write(self.to_chrome, data)
            data = data[n:]
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            m = self._read_message(deadline)
            if m.get("id") == self.next_id:
                if "error" in m:
                    raise Error("%s: %s" % (method, m["error"]))
                return m.get("result", {})
            self.events.append(m)

    def new_page(self):
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget",
                            {"targetId": target, "flatten": True})["sessionId"]
        return Page(self, session)


class Page:
    def __init__(self, browser, session):
        self.b, self.session = browser, session
        self.send("Page.enable")
        self.send("Runtime.enable")

    def send(self, method, params=None, timeout=None):
        return self.b.send(method, params, self.session, timeout)

    def goto(self, url):
        r = self.send("Page.navigate", {"url": url})
        if r.get("errorText"):
            raise Error("navigate %s: %s" % (url, r["errorText"]))

    def eval(self, expression, timeout=None):
        """The value of a JavaScript expression (promises awaited), as JSON."""
        r = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                           "awaitPromise": True}, timeout)
        if "exceptionDetails" in r:
            raise Error("%s: %s" % (expression, r["exceptionDetails"].get("exception", {})
                                    .get("description", r["exceptionDetails"])))
        return r["result"].get("value")

    def wait(self, expression, seconds, poll=0.1):
        """Poll expression until it is truthy; returns its value, or None after `seconds`."""
        end = time.monotonic() + seconds
        while True:
            v = self.eval(expression)
            if v:
                return v
            if time.monotonic() >= end:
                return None
            time.sleep(poll)

    def mouse(self, kind, x, y, buttons=1):
        """A synthetic mouse event: kind mousePressed, mouseMoved or mouseReleased."""
        self.send("Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y, "button": "left",
                                               "buttons": buttons, "clickCount": 1})

    def screenshot(self, path):
        import base64
        data = self.send("Page.captureScreenshot", {"format": "png",
                                                    "captureBeyondViewport": True})["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))
