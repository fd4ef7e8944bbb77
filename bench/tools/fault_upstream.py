#!/usr/bin/env python3
"""A JSONPlaceholder-shaped upstream that misbehaves on purpose, for bench/upstream_faults.py.

    bench/tools/fault_upstream.py PORT

`GET /posts/{id}` answers with the fault numbered `id` (see FAULTS), or `id % 100` for ids of 100 and more
(so that many calls at once are distinct URLs, which the service does not fold into one fetch); `GET /_stats` answers with the
connections open per fault and the body bytes handed to the kernel per fault, as JSON. Loopback only.
Every fault is bounded: an "endless" body stops after ENDLESS_LIMIT bytes, a hang after HANG_LIMIT
seconds, so the process never runs away even if its client does.
"""

import json
import socket
import struct
import sys
import threading
import time

ENDLESS_LIMIT = 8 << 30  # bytes: far beyond any sane client limit, still finite
HANG_LIMIT = 120  # seconds
TEN_MB = 10 * 1024 * 1024
POST = b'{"userId":1,"id":%d,"title":"t","body":"b"}'

FAULTS = {
    1: "hang",  # accepts and reads the request, sends nothing
    2: "headers_then_hang",  # a head with Content-Length, then nothing
    3: "trickle",  # a valid post, one byte per second
    4: "reset",  # a head, half a body, then a TCP reset
    5: "garbage",  # bytes that are not HTTP at all
    6: "bad_json",  # 200 with a truncated JSON body
    7: "status_500",
    8: "status_429",  # with Retry-After: 1
    9: "ten_mb",  # 200, Content-Length 10 MB
    10: "endless",  # 200, chunked, never ends
    11: "ok",  # a good post
    12: "ten_mb_chunked",  # 200, chunked, 10 MB of garbage (no length to refuse early)
    13: "three_mb_post",  # a good post whose body is 3 MB: under the limit, decoded and cached
    14: "endless_close",  # 200, no length, Connection: close, never ends (delimited only by the close)
}

lock = threading.Lock()
open_connections = {name: 0 for name in FAULTS.values()}
bytes_sent = {name: 0 for name in FAULTS.values()}


def count(name, delta_open=0, sent=0):
    with lock:
        open_connections[name] += delta_open
        bytes_sent[name] += sent


def read_request(conn):
    data = b""
    while b"\r\n\r\n" not in data and len(data) < 65536:
        more = conn.recv(4096)
        if not more:
            return None
        data += more
    line = data.split(b"\r\n", 1)[0].decode("latin-1")
    parts = line.split(" ")
    return parts[1] if len(parts) >= 2 else None


def head(status, reason, headers):
    lines = ["HTTP/1.1 %d %s" % (status, reason)] + ["%s: %s" % kv for kv in headers] + ["", ""]
    return "\r\n".join(lines).encode("latin-1")


def respond(conn, status, reason, body, extra=()):
    conn.sendall(head(status, reason, [("Content-Type", "application/json"), ("Content-Length", str(len(body)))] + list(extra)) + body)
    return len(body)


def wait_for_close(conn, seconds):
    """Blocks until the client closes (or `seconds` pass)."""
    conn.settimeout(seconds)
    try:
        while conn.recv(4096):
            pass
    except OSError:
        pass


def serve(conn):
    name = "unknown"
    try:
        path = read_request(conn)
        if path == "/_stats":
            with lock:
                body = json.dumps({"open": open_connections, "sent": bytes_sent}).encode()
            respond(conn, 200, "OK", body)
            return
        fault_id = 0
        if path and path.startswith("/posts/"):
            try:
                fault_id = int(path[len("/posts/"):].split("?")[0])
            except ValueError:
                fault_id = 0
        name = FAULTS.get(fault_id % 100 if fault_id >= 100 else fault_id, "unknown")
        if name == "unknown":
            respond(conn, 404, "Not Found", b"{}")
            return
        count(name, delta_open=1)
        try:
            run_fault(conn, name, fault_id)
        finally:
            count(name, delta_open=-1)
    except OSError:
        pass
    finally:
        try:
            conn.close()
        except OSError:
            pass


def run_fault(conn, name, fault_id):
    if name == "hang":
        wait_for_close(conn, HANG_LIMIT)
    elif name == "headers_then_hang":
        conn.sendall(head(200, "OK", [("Content-Type", "application/json"), ("Content-Length", "100")]))
        wait_for_close(conn, HANG_LIMIT)
    elif name == "trickle":
        body = POST % fault_id
        conn.sendall(head(200, "OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))]))
        for byte in body:
            time.sleep(1)
            conn.sendall(bytes([byte]))
            count(name, sent=1)
    elif name == "reset":
        conn.sendall(head(200, "OK", [("Content-Type", "application/json"), ("Content-Length", "1000")]) + b'{"userId":1,')
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    elif name == "garbage":
        conn.sendall(b"\x00\xff\x13 this is not HTTP \x7f\x80" * 64)
    elif name == "bad_json":
        count(name, sent=respond(conn, 200, "OK", b'{"userId":1,"id":'))
    elif name == "status_500":
        count(name, sent=respond(conn, 500, "Internal Server Error", b'{"error":500}'))
    elif name == "status_429":
        count(name, sent=respond(conn, 429, "Too Many Requests", b'{"error":429}', [("Retry-After", "1")]))
    elif name == "ten_mb":
        body = b'["' + b"x" * (TEN_MB - 4) + b'"]'
        count(name, sent=respond(conn, 200, "OK", body))
    elif name == "ok":
        count(name, sent=respond(conn, 200, "OK", POST % fault_id))
    elif name == "three_mb_post":
        body = b'{"userId":1,"id":%d,"title":"t","body":"' % fault_id + b"x" * (3 << 20) + b'"}'
        count(name, sent=respond(conn, 200, "OK", body))
    elif name == "endless_close":
        conn.sendall(head(200, "OK", [("Content-Type", "application/json"), ("Connection", "close")]))
        filler = b"1" * 65536
        sent = 0
        while sent < ENDLESS_LIMIT:
            conn.sendall(filler)
            sent += len(filler)
            count(name, sent=len(filler))
    elif name in ("endless", "ten_mb_chunked"):
        limit = ENDLESS_LIMIT if name == "endless" else TEN_MB
        conn.sendall(head(200, "OK", [("Content-Type", "application/json"), ("Transfer-Encoding", "chunked")]))
        filler = b"1" * 65536
        chunk = b"10000\r\n" + filler + b"\r\n"
        sent = 0
        while sent < limit:
            conn.sendall(chunk)
            sent += len(filler)
            count(name, sent=len(filler))
        if name == "ten_mb_chunked":
            conn.sendall(b"0\r\n\r\n")


def main():
    port = int(sys.argv[1])
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(256)
    print("fault upstream on 127.0.0.1:%d" % port, flush=True)
    while True:
        conn, _ = listener.accept()
        threading.Thread(target=serve, args=(conn,), daemon=True).start()


if __name__ == "__main__":
    main()
