#!/usr/bin/env python3
"""usage: channels_idle.py BASE_URL N CHANNELS [PID] [--hold S] [--stall-events E] [--event-bytes B]

Idle channel subscribers: opens N SSE subscriptions spread over CHANNELS channels (GET /channels/idle-K, K = i mod
CHANNELS), waits until every one has its response head, holds them --hold seconds with nothing published, and reports
the server's RSS and anonymous memory (smaps_rollup) before and while held, per subscriber. Then, with
--stall-events E > 0, one more subscriber that never reads joins channel `stall`, E events of about B bytes are
published to it (POSTs of 100 events each), and the server's anonymous memory growth is reported with the
server's count of overflow disconnects (`spout_channel_overflow_disconnects_total`, when it has that metric).

Talks only to the given loopback URL; every wait is bounded; the script always stops by itself.
"""
import argparse
import json
import resource
import selectors
import socket
import subprocess
import time
import urllib.request


def emit(name, value, unit=""):
    print(f"{name}: {value}{(' ' + unit) if unit else ''}", flush=True)


def memory_kib(pid):
    values = {}
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 2 and parts[0].endswith(":") and parts[1].isdigit():
                values[parts[0][:-1]] = int(parts[1])
    return values.get("Rss", 0), values.get("Anonymous", 0)


def overflow_count(url):
    """spout_channel_overflow_disconnects_total from /metrics, or None (the Go peer has no such metric)."""
    try:
        with urllib.request.urlopen(f"{url}/metrics", timeout=5) as response:
            text = response.read().decode()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("spout_channel_overflow_disconnects_total "):
            return int(float(line.split()[1]))
    return None


def pid_for_port(port):
    out = subprocess.run(["ss", "-ltnpH", f"sport = :{port}"], capture_output=True, text=True).stdout
    for part in out.split("pid=")[1:]:
        return int(part.split(",")[0])
    raise SystemExit(f"no process listens on port {port}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("url")
    ap.add_argument("n", type=int)
    ap.add_argument("channels", type=int)
    ap.add_argument("pid", type=int, nargs="?")
    ap.add_argument("--hold", type=float, default=5.0)
    ap.add_argument("--stall-events", type=int, default=0)
    ap.add_argument("--event-bytes", type=int, default=1000)
    ap.add_argument("--timeout", type=float, default=90.0)
    a = ap.parse_args()
    host_port = a.url.split("://", 1)[1].rstrip("/")
    host, port = host_port.rsplit(":", 1)
    port = int(port)
    pid = a.pid or pid_for_port(port)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = a.n + 64
    if soft < need:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(need, hard), hard))
    deadline = time.monotonic() + a.timeout

    time.sleep(0.3)
    rss0, anon0 = memory_kib(pid)
    emit("rss_before", rss0, "KiB")
    emit("anon_before", anon0, "KiB")

    sel = selectors.DefaultSelector()
    socks = []
    headed = 0
    pending = {}
    started = 0
    while (started < a.n or pending) and time.monotonic() < deadline:
        while started < a.n and len(pending) < 256:
            s = socket.socket(socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET, socket.SOCK_STREAM)
            s.setblocking(False)
            s.connect_ex((host.strip("[]"), port))
            request = (f"GET /channels/idle-{started % a.channels} HTTP/1.1\r\nHost: {host_port}\r\n"
                       f"Accept: text/event-stream\r\n\r\n").encode()
            pending[s.fileno()] = [s, request, b""]
            sel.register(s, selectors.EVENT_WRITE)
            started += 1
        for key, mask in sel.select(timeout=0.5):
            s = key.fileobj
            entry = pending.get(s.fileno())
            if entry is None:
                continue
            if mask & selectors.EVENT_WRITE:
                try:
                    s.send(entry[1])
                except OSError:
                    sel.unregister(s)
                    s.close()
                    del pending[s.fileno()]
                    continue
                sel.modify(s, selectors.EVENT_READ)
                continue
            try:
                data = s.recv(4096)
            except BlockingIOError:
                continue
            except OSError:
                data = b""
            entry[2] += data
            if not data or b"\r\n\r\n" in entry[2]:
                sel.unregister(s)
                del pending[s.fileno()]
                if entry[2].startswith(b"HTTP/1.1 200"):
                    headed += 1
                    socks.append(s)
                else:
                    s.close()
    sel.close()
    emit("subscribers_open", headed, "count")
    time.sleep(a.hold)
    rss1, anon1 = memory_kib(pid)
    emit("rss_held", rss1, "KiB")
    emit("anon_held", anon1, "KiB")
    if headed:
        emit("rss_per_subscriber", round((rss1 - rss0) * 1024 / headed), "B")
        emit("anon_per_subscriber", round((anon1 - anon0) * 1024 / headed), "B")

    if a.stall_events > 0:
        stalled = socket.create_connection((host.strip("[]"), port), timeout=5)
        stalled.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        stalled.sendall(f"GET /channels/stall HTTP/1.1\r\nHost: {host_port}\r\n\r\n".encode())
        time.sleep(0.3)
        rss2, anon2 = memory_kib(pid)
        payload = "x" * max(1, a.event_bytes - 12)
        batch = json.dumps([{"data": payload}] * 100).encode()
        posted = 0
        while posted < a.stall_events and time.monotonic() < deadline:
            req = urllib.request.Request(f"{a.url}/channels/stall/events", data=batch,
                                         headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(req, timeout=10) as response:
                response.read()
            posted += 100
        time.sleep(0.5)
        rss3, anon3 = memory_kib(pid)
        emit("stall_events_published", posted, "count")
        emit("stall_anon_growth", anon3 - anon2, "KiB")
        emit("stall_rss_growth", rss3 - rss2, "KiB")
        overflows = overflow_count(a.url)
        if overflows is not None:
            emit("stall_overflow_disconnects", overflows, "count")
        stalled.close()

    for s in socks:
        s.close()


if __name__ == "__main__":
    main()
