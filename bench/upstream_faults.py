#!/usr/bin/env python3
"""The upstream fault table of issue 11, against a release build of spout.

    bench/upstream_faults.py SPOUT_BINARY [LABEL]     (bench/upstream_faults.sh builds and calls this)

Starts bench/tools/fault_upstream.py and the binary (default configuration: 3 attempts, 5 s per attempt,
10 s deadline, 4 MiB body limit) pointed at it, then for each fault asks `GET /articles/{id}` once while a
prober thread asks `GET /health` over and over on one keep-alive connection — from before the request
until 1.5 s after the upstream saw every connection of the fault close (libcurl may keep reading a runaway
body for a while after the answer, and the memory return runs 1 s after a large body) — and samples the
server's RSS. A first row runs the prober alone for 5 s: the machine's own latency spikes show there
too. Then 40 concurrent requests to 10 MB chunked bodies. Prints, per fault: the answer's status and time, the /health count, max and p99, failures, and
RSS (total and anonymous, from /proc/PID/smaps_rollup) before, at its peak, and 1.5 s after. Every loop is
bounded in count and time.

Then the crowd table: endless chunked, endless close-delimited and trickling bodies at 1, 8 and 30 concurrent calls
(distinct URLs), with the slowest answer, how long after the last answer the upstream saw its last connection of the
fault close, RSS before / 1.5 s after, and the server's CPU over the 2 s after that (user + system, from /proc).
"""

import http.client
import json
import os
import socket
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
FAULT_ORDER = [
    (11, "ok"),
    (1, "hang"),
    (2, "headers then hang"),
    (3, "trickle (1 byte/s)"),
    (4, "reset"),
    (5, "garbage"),
    (6, "bad JSON"),
    (7, "500"),
    (8, "429 Retry-After: 1"),
    (9, "10 MB (Content-Length)"),
    (10, "endless"),
    (12, "10 MB chunked"),
    (13, "3 MB post (cached)"),
]
FAULT_NAMES = {
    1: "hang", 2: "headers_then_hang", 3: "trickle", 4: "reset", 5: "garbage", 6: "bad_json",
    7: "status_500", 8: "status_429", 9: "ten_mb", 10: "endless", 11: "ok", 12: "ten_mb_chunked",
    13: "three_mb_post", 14: "endless_close",
}
# The crowd rows: each fault at 1, 8 and 30 calls at once, each call a distinct URL (/articles/{k*100+id}).
CROWD_FAULTS = [(10, "endless chunked"), (14, "endless close-delim."), (3, "trickle")]
CROWD_SIZES = [1, 8, 30]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def smaps(pid):
    """(Rss, Anonymous) in KiB."""
    rss = anon = 0
    with open("/proc/%d/smaps_rollup" % pid) as f:
        for line in f:
            if line.startswith("Rss:"):
                rss = int(line.split()[1])
            elif line.startswith("Anonymous:"):
                anon = int(line.split()[1])
    return rss, anon


def get(port, path, timeout):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def upstream_stats(port):
    _, body = get(port, "/_stats", 5)
    return json.loads(body)


class Prober(threading.Thread):
    """GET /health on one keep-alive connection until stopped (at most 60 s or 100,000 requests);
    samples the server's RSS every 20th request."""

    def __init__(self, port, pid):
        super().__init__(daemon=True)
        self.port, self.pid = port, pid
        self.stop_event = threading.Event()
        self.latencies, self.failures = [], []
        self.peak_rss = self.peak_anon = 0

    def run(self):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
        deadline = time.monotonic() + 60
        for n in range(100_000):
            if self.stop_event.is_set() or time.monotonic() > deadline:
                break
            start = time.perf_counter()
            try:
                conn.request("GET", "/health")
                response = conn.getresponse()
                response.read()
                if response.status != 200:
                    self.failures.append("status %d" % response.status)
            except Exception as error:  # a timeout or a reset: record it and reconnect
                self.failures.append(repr(error))
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
            self.latencies.append(time.perf_counter() - start)
            if n % 20 == 0:
                rss, anon = smaps(self.pid)
                self.peak_rss, self.peak_anon = max(self.peak_rss, rss), max(self.peak_anon, anon)
            time.sleep(0.002)
        conn.close()


def percentile(values, fraction):
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


def cpu_seconds(pid):
    """User + system CPU of the process so far, in seconds."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def crowd(port, upstream_port, pid, fault_id, title, size):
    """`size` concurrent calls to the fault; prints one row."""
    name = FAULT_NAMES[fault_id]
    before = smaps(pid)
    results = [None] * size
    times = [0.0] * size

    def one(index):
        start = time.perf_counter()
        try:
            results[index] = get(port, "/articles/%d" % ((index + 1) * 100 + fault_id), 40)[0]
        except Exception as error:
            results[index] = repr(error)
        times[index] = time.perf_counter() - start

    threads = [threading.Thread(target=one, args=(i,)) for i in range(size)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(45)
    answered = time.monotonic()
    idle = wait_upstream_idle(upstream_port, name, 30)
    closed_after = time.monotonic() - answered
    left = upstream_stats(upstream_port)["open"].get(name, 0)
    time.sleep(1.5)
    after = smaps(pid)
    cpu_start = cpu_seconds(pid)
    time.sleep(2)
    cpu = (cpu_seconds(pid) - cpu_start) / 2
    statuses = "/".join(sorted(set(str(s) for s in results)))
    print("%-22s %4d %8s %8.2fs %10s %5d %12s %12s %6.0f%%" % (
        title, size, statuses, max(times), ("%.2fs" % closed_after) if idle else ">30s", left,
        "%d/%d" % before, "%d/%d" % after, cpu * 100), flush=True)


def wait_upstream_idle(upstream_port, name, seconds):
    """Waits (polling the upstream's counters every 50 ms, bounded) until no connection of `name` is open."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if upstream_stats(upstream_port)["open"].get(name, 0) == 0:
            return True
        time.sleep(0.05)
    return False


def main():
    binary = sys.argv[1]
    label = sys.argv[2] if len(sys.argv) > 2 else os.path.basename(binary)
    upstream_port, port = free_port(), free_port()
    upstream = subprocess.Popen([sys.executable, os.path.join(HERE, "tools", "fault_upstream.py"), str(upstream_port)],
                                stdout=subprocess.DEVNULL)
    env = dict(os.environ, SPOUT_HOST="127.0.0.1", SPOUT_PORT=str(port),
               SPOUT_UPSTREAM_URL="http://127.0.0.1:%d" % upstream_port)
    server = subprocess.Popen([binary], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    rows = []
    try:
        for _ in range(200):  # up to 10 s for both to listen
            try:
                if get(port, "/ready", 1)[0] == 200 and upstream_stats(upstream_port):
                    break
            except OSError:
                time.sleep(0.05)
        start_rss = smaps(server.pid)
        print("%s: spout pid %d on %d, fault upstream on %d; RSS at start %d KiB (anonymous %d)"
              % (label, server.pid, port, upstream_port, start_rss[0], start_rss[1]), flush=True)
        header = "%-24s %6s %8s %7s %9s %9s %5s %12s %12s %12s" % (
            "fault", "status", "answer", "health", "max ms", "p99 ms", "fail", "RSS before", "RSS peak", "RSS +1.5 s")
        print(header, flush=True)
        # A control row: /health alone for 5 s, the same prober, no upstream request. Spikes of the
        # machine's own load show here as well as under a fault.
        before = smaps(server.pid)
        prober = Prober(port, server.pid)
        prober.start()
        time.sleep(5)
        prober.stop_event.set()
        prober.join(10)
        print("%-24s %6s %8s %7d %9.1f %9.1f %5d %12s" % (
            "(no request, 5 s)", "-", "-", len(prober.latencies), max(prober.latencies, default=float("nan")) * 1000,
            percentile(prober.latencies, 0.99) * 1000, len(prober.failures), "%d/%d" % before), flush=True)
        for fault_id, title in FAULT_ORDER:
            name = FAULT_NAMES[fault_id]
            before = smaps(server.pid)
            prober = Prober(port, server.pid)
            prober.start()
            time.sleep(0.05)
            start = time.perf_counter()
            try:
                status, _ = get(port, "/articles/%d" % fault_id, 30)
            except Exception as error:
                status = repr(error)
            answer = time.perf_counter() - start
            idle = wait_upstream_idle(upstream_port, name, 30)
            time.sleep(1.5)  # past the memory return, which runs 1 s after a large body
            prober.stop_event.set()
            prober.join(10)
            after = smaps(server.pid)
            row = dict(fault=title, status=status, answer_s=answer, health_n=len(prober.latencies),
                       health_max_ms=max(prober.latencies, default=float("nan")) * 1000,
                       health_p99_ms=percentile(prober.latencies, 0.99) * 1000, failures=prober.failures,
                       rss_before=before, rss_peak=(max(prober.peak_rss, after[0]), max(prober.peak_anon, after[1])),
                       rss_after=after, upstream_closed=idle)
            rows.append(row)
            print("%-24s %6s %7.2fs %7d %9.1f %9.1f %5d %12s %12s %12s%s" % (
                title, status, answer, row["health_n"], row["health_max_ms"], row["health_p99_ms"], len(prober.failures),
                "%d/%d" % before, "%d/%d" % row["rss_peak"], "%d/%d" % after,
                "" if idle else "  (upstream connection still open after 30 s)"), flush=True)

        # 40 concurrent 10 MB chunked bodies.
        before = smaps(server.pid)
        prober = Prober(port, server.pid)
        prober.start()
        results = [None] * 40

        def one(index):
            try:
                results[index] = get(port, "/articles/12", 30)[0]
            except Exception as error:
                results[index] = repr(error)

        threads = [threading.Thread(target=one, args=(i,)) for i in range(40)]
        start = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join(40)
        answer = time.perf_counter() - start
        wait_upstream_idle(upstream_port, "ten_mb_chunked", 30)
        time.sleep(1.5)
        prober.stop_event.set()
        prober.join(10)
        after = smaps(server.pid)
        statuses = sorted(set(str(s) for s in results))
        print("%-24s %6s %7.2fs %7d %9.1f %9.1f %5d %12s %12s %12s" % (
            "40 x 10 MB chunked", "/".join(statuses), answer, len(prober.latencies),
            max(prober.latencies, default=float("nan")) * 1000, percentile(prober.latencies, 0.99) * 1000,
            len(prober.failures), "%d/%d" % before,
            "%d/%d" % (max(prober.peak_rss, after[0]), max(prober.peak_anon, after[1])), "%d/%d" % after), flush=True)

        print(flush=True)
        print("%-22s %4s %8s %9s %10s %5s %12s %12s %7s" % (
            "crowd", "n", "status", "slowest", "closed in", "left", "RSS before", "RSS +1.5 s", "CPU"), flush=True)
        for fault_id, title in CROWD_FAULTS:
            for size in CROWD_SIZES:
                crowd(port, upstream_port, server.pid, fault_id, title, size)

        time.sleep(3)  # the memory return runs 1 s after the last large body
        end = smaps(server.pid)
        print("RSS (KiB, total/anonymous): start %d/%d, 3 s after the last fault %d/%d" % (start_rss + end), flush=True)
        # What is left is in use, not free heap the process could hand back: a malloc_trim(0) called from
        # outside (gdb, when installed) changes little.
        if subprocess.run(["which", "gdb"], stdout=subprocess.DEVNULL).returncode == 0:
            subprocess.run(["gdb", "-p", str(server.pid), "-batch", "-ex", "call (int)malloc_trim(0)"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)
            print("RSS after a malloc_trim(0) called through gdb: %d/%d" % smaps(server.pid), flush=True)
        failures = [f for row in rows for f in row["failures"]]
        if failures:
            print("health failures:", failures[:10], flush=True)
    finally:
        server.terminate()
        upstream.terminate()
        for process in (server, upstream):
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()


if __name__ == "__main__":
    main()
