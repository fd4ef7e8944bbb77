#!/usr/bin/env python3
"""What a stalled SSE reader pins, kernel socket memory counted, not RSS alone.

usage: stalled_kernel_memory.py BASE_URL N PID [WARM_BYTES] [READER_RCVBUF]

Opens N readers of GET /sequences/naturals (unbounded), one after the other; each reads WARM_BYTES of the
stream at full speed (default 4 MiB, so the kernel's send-buffer autotuning sees a fast reader), then stops
reading and stays connected. Each reader's SO_RCVBUF is fixed at READER_RCVBUF (default 65536; the kernel
books twice that) before it connects: a remote reader's receive buffer is on its own host, and an autotuned
one here (up to tcp_rmem's maximum) would hide the server's side. Waits until the kernel's TCP memory stops
growing (three equal samples 0.5 s apart, at most 60 s), then prints per reader:
  - kernel_tcp_mem_per_reader: growth of /proc/net/sockstat "TCP: ... mem" (pages of 4 KiB, every socket
    buffer of this network namespace: the server's send queues and the readers' receive queues);
  - server_send_queue_per_reader: the server's sockets alone, from `ss -tm` (skmem w: bytes queued to send,
    as the kernel accounts them);
  - rss_per_reader: growth of the server's VmRSS (user space);
  - total_per_reader: kernel_tcp_mem_per_reader + rss_per_reader.
sockstat counts every TCP socket of the namespace: run it on a quiet machine (other traffic shows up here).
Loopback only; the readers are closed at the end.
"""
import re
import socket
import subprocess
import sys
import time
from urllib.parse import urlparse

PAGE = 4096


def tcp_mem_pages():
    with open("/proc/net/sockstat") as f:
        for line in f:
            if line.startswith("TCP:"):
                return int(re.search(r"\bmem (\d+)", line).group(1))
    raise SystemExit("no TCP line in /proc/net/sockstat")


def server_send_queued(port):
    """Sum of skmem w (wmem_queued) over established sockets whose local port is the server's."""
    out = subprocess.run(["ss", "-tmnH", "state", "established", f"( sport = :{port} )"],
                         capture_output=True, text=True, check=True).stdout
    return sum(int(m) for m in re.findall(r"skmem:\([^)]*\bw(\d+)", out))


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise SystemExit("no VmRSS")


def main():
    if len(sys.argv) < 4:
        raise SystemExit(__doc__)
    url = urlparse(sys.argv[1])
    if url.hostname not in ("127.0.0.1", "localhost", "::1"):
        raise SystemExit("refusing non-loopback URL")
    count, pid = int(sys.argv[2]), int(sys.argv[3])
    warm = int(sys.argv[4]) if len(sys.argv) > 4 else 4 << 20
    rcvbuf = int(sys.argv[5]) if len(sys.argv) > 5 else 65536
    port = url.port
    time.sleep(0.5)
    mem0, rss0 = tcp_mem_pages(), rss_kib(pid)
    readers = []
    for _ in range(count):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        s.connect(("127.0.0.1", port))
        s.sendall(b"GET /sequences/naturals HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n")
        got = 0
        while got < warm:
            chunk = s.recv(1 << 20)
            if not chunk:
                raise SystemExit("the server closed a reader during its warm-up")
            got += len(chunk)
        readers.append(s)  # from here on, never read again
    samples = []
    deadline = time.time() + 60
    while time.time() < deadline:
        time.sleep(0.5)
        samples.append(tcp_mem_pages())
        if len(samples) >= 3 and samples[-1] == samples[-2] == samples[-3]:
            break
    mem1, rss1 = samples[-1], rss_kib(pid)
    queued = server_send_queued(port)
    kernel = (mem1 - mem0) * PAGE / count / 1024
    rss = (rss1 - rss0) / count
    print(f"readers: {count}")
    print(f"warm_bytes_each: {warm} B")
    print(f"reader_rcvbuf: {rcvbuf} B")
    print(f"kernel_tcp_mem_per_reader: {kernel:.1f} KiB")
    print(f"server_send_queue_per_reader: {queued / count / 1024:.1f} KiB")
    print(f"rss_per_reader: {rss:.1f} KiB")
    print(f"total_per_reader: {kernel + rss:.1f} KiB")
    print(f"kernel_tcp_mem_total: {(mem1 - mem0) * PAGE / 1048576:.1f} MiB")
    for s in readers:
        s.close()


main()
