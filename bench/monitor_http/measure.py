#!/usr/bin/env python3
"""measure.py — issue 36's three bars on `bench_monitor_http` (a synthetic job fed to the
monitor's HTTP server; bench/bench_monitor_http.c says what it does), stdlib only.

  1. latency: after ITERS iterations are in, N requests of each of GET /api/state and
     /api/curves?name=NAME&width=1000 for the five curves, one fresh TCP connection per request
     (as a page's first load), timed from connect to the last byte of the body; per endpoint
     median and max, and per round the sum of all six (a whole page's data). Bar: < 100 ms.
  2. CPU: 5 SSE clients (/api/events, each a thread reading its socket and counting events)
     while the driver streams RATE events/s; the driver's utime + stime from /proc/PID/stat over
     the window, as a share of one core, also split into the feeder (the main thread, the
     monitor reactor's part) and the server's threads (/proc/PID/task/*/stat). Bar: the server
     under 2% of a core.
  3. RSS: the driver's VmRSS every SAMPLE s over the same window: first, last, max. Bar: flat.

Each SSE client's ids must run without a hole and its count must match the events the driver
sent while it listened (within what a connect and a close take), else the run fails: a stream
that stalled would make the CPU figure meaningless.

usage: measure.py DRIVER SECONDS [--iters 100000] [--rate 50] [--clients 5] [--requests 50]
                                 [--sample 10]
"""
import argparse
import os
import socket
import statistics
import subprocess
import sys
import threading
import time

TICK = os.sysconf("SC_CLK_TCK")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def get(port, path):
    """One GET on a fresh connection: (seconds, status, body bytes)."""
    t0 = time.perf_counter()
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(b"GET " + path.encode() + b" HTTP/1.1\r\nHost: b\r\nConnection: close\r\n\r\n")
    data = b""
    while True:
        chunk = s.recv(1 << 16)
        if not chunk:
            break
        data += chunk
    s.close()
    dt = time.perf_counter() - t0
    head, _, body = data.partition(b"\r\n\r\n")
    return dt, int(head.split(b" ")[1]), len(body)


def cpu_ticks(pid):
    """utime + stime of the process and of each of its threads, in clock ticks."""
    def ticks(path):
        with open(path) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])
    threads = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            threads[int(tid)] = ticks(f"/proc/{pid}/task/{tid}/stat")
        except FileNotFoundError:
            pass        # a connection thread that just ended
    return ticks(f"/proc/{pid}/stat"), threads


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


class SseClient(threading.Thread):
    """Reads /api/events after Last-Event-ID `after`, counting ids, holes and gap events, until
    stopped."""

    def __init__(self, port, after):
        super().__init__(daemon=True)
        self.port, self.after = port, after
        self.ids, self.holes, self.gaps, self.error = 0, 0, 0, None
        self.first = self.last = None
        self.halt = threading.Event()

    def run(self):
        try:
            s = socket.create_connection(("127.0.0.1", self.port), timeout=15)
            # HTTP/1.0: the stream comes unchunked (chunk-size lines would cut SSE lines)
            s.sendall(b"GET /api/events HTTP/1.0\r\nHost: b\r\nLast-Event-ID: %d\r\n\r\n"
                      % self.after)
            buf = b""
            while not self.halt.is_set():
                chunk = s.recv(1 << 16)
                if not chunk:
                    break
                buf += chunk
                *lines, buf = buf.split(b"\n")
                for line in lines:
                    if line.startswith(b"event: gap"):
                        self.gaps += 1
                    if line.startswith(b"id: "):
                        i = int(line[4:])
                        if self.last is not None and i != self.last + 1:
                            self.holes += 1
                        if self.first is None:
                            self.first = i
                        self.last = i
                        self.ids += 1
            s.close()
        except OSError as e:
            self.error = str(e)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("driver")
    ap.add_argument("seconds", type=float)
    ap.add_argument("--iters", type=int, default=100000)
    ap.add_argument("--rate", type=float, default=50)
    ap.add_argument("--clients", type=int, default=5)
    ap.add_argument("--requests", type=int, default=50)
    ap.add_argument("--sample", type=float, default=10)
    a = ap.parse_args()
    port = free_port()
    # the driver streams until SIGTERM; `timeout` ends it should this script die
    drv = subprocess.Popen(["timeout", str(int(a.seconds + 600)), a.driver, f"127.0.0.1:{port}",
                            str(a.iters), str(a.rate), "0"], stdout=subprocess.PIPE, text=True)
    ready = drv.stdout.readline().strip()
    if not ready.startswith("ready"):
        sys.exit(f"measure.py: the driver did not start ({ready!r})")
    # timeout's child is the driver: its pid for /proc
    pid = int(subprocess.check_output(["pgrep", "-P", str(drv.pid)]).split()[0])
    print(f"driver: pid {pid}, {ready}; {a.iters} iterations in the server; streaming "
          f"{a.rate:g} train events/s from there on (+1 eval event per 1000 iterations)")
    ok = True

    # 1. latency
    paths = ["/api/state"] + [f"/api/curves?name={n}&width=1000"
                              for n in ("loss", "lr", "it_per_s", "data_wait", "psnr")]
    times = {p: [] for p in paths}
    sizes = {}
    rounds = []
    for _ in range(a.requests):
        total = 0.0
        for p in paths:
            dt, status, n = get(port, p)
            if status != 200:
                sys.exit(f"measure.py: {p}: HTTP {status}")
            times[p].append(dt)
            sizes[p] = n
            total += dt
        rounds.append(total)
    print(f"\n1. latency, {a.requests} requests each, fresh connection each, while streaming "
          f"(ms; bar < 100):")
    print(f"  {'endpoint':40s} {'median':>8s} {'max':>8s} {'bytes':>8s}")
    for p in paths:
        print(f"  {p:40s} {1e3 * statistics.median(times[p]):8.2f} {1e3 * max(times[p]):8.2f} "
              f"{sizes[p]:8d}")
    print(f"  {'all six, one after another':40s} {1e3 * statistics.median(rounds):8.2f} "
          f"{1e3 * max(rounds):8.2f}")
    worst = max(max(v) for v in times.values())
    print(f"  bar (each request < 100 ms): {'met' if worst < 0.1 else 'MISSED'} "
          f"(slowest single request {1e3 * worst:.2f} ms)")

    # 2, 3. streaming: each client asks from id 0, so it gets a gap event (the ring holds the
    # last 4096 of the fill's events), that backlog, then the live events; the window starts
    # once the backlog is read
    clients = [SseClient(port, 0) for _ in range(a.clients)]
    for c in clients:
        c.start()
    time.sleep(2.0)     # connected, and past the ring's backlog (4096 events)
    base_ids = [c.ids for c in clients]
    t0 = time.monotonic()
    c0, th0 = cpu_ticks(pid)
    rss = [(0.0, rss_kib(pid))]
    while time.monotonic() - t0 < a.seconds:
        time.sleep(min(a.sample, a.seconds - (time.monotonic() - t0)))
        rss.append((time.monotonic() - t0, rss_kib(pid)))
    c1, th1 = cpu_ticks(pid)
    wall = time.monotonic() - t0
    got = [c.ids - b for c, b in zip(clients, base_ids)]
    for c in clients:
        c.halt.set()
    drv.terminate()
    drv.wait(timeout=30)
    for c in clients:
        c.join(timeout=15)
    feeder = th1.get(pid, 0) - th0.get(pid, 0)
    server = (c1 - c0) - feeder
    share = lambda ticks: 100.0 * ticks / TICK / wall
    expect = a.rate * wall
    print(f"\n2. CPU while streaming to {a.clients} SSE clients for {wall:.1f} s "
          f"(% of one core; bar: server < 2):")
    print(f"  whole driver process {share(c1 - c0):6.2f}%  ({(c1 - c0) / TICK:.2f} CPU-s)")
    print(f"  feeder (main thread: the reactor's calls) {share(feeder):6.2f}%")
    print(f"  server threads (libmicrohttpd) {share(server):6.2f}%")
    print(f"  bar: {'met' if share(server) < 2 else 'MISSED'} (server threads); whole process "
          f"{'also under' if share(c1 - c0) < 2 else 'NOT under'} 2%")
    print(f"  SSE clients: events received in the window {got} (driver's rate x window "
          f"{expect:.0f}); holes {[c.holes for c in clients]}, gap events "
          f"{[c.gaps for c in clients]}, errors {[c.error for c in clients]}")
    for c, n in zip(clients, got):
        if c.holes or c.error or abs(n - expect) > 0.05 * expect + a.rate:
            print("  FAIL: a client's stream was incomplete or stalled")
            ok = False
            break
    print(f"\n3. RSS (VmRSS, KiB) every {a.sample:g} s over {wall:.1f} s:")
    print("  " + " ".join(f"{int(t)}s:{k}" for t, k in rss))
    ks = [k for _, k in rss]
    print(f"  first {ks[0]} KiB, last {ks[-1]} KiB, max {max(ks)} KiB, last - first "
          f"{ks[-1] - ks[0]:+d} KiB ({100.0 * (ks[-1] - ks[0]) / ks[0]:+.2f}%)")
    print(f"  driver exit status {drv.returncode}")
    if drv.returncode != 0:
        ok = False
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
