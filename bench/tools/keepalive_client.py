#!/usr/bin/env python3
"""usage: client.py PORT PATH N [ACCEPT] -- N sequential keep-alive GETs on one connection."""
import socket, sys
port, path, n = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
accept = sys.argv[4] if len(sys.argv) > 4 else None
req = f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n" + (f"Accept: {accept}\r\n" if accept else "") + "\r\n"
req = req.encode()
s = socket.create_connection(("127.0.0.1", port), timeout=30)
buf = b""
for i in range(n):
    s.sendall(req)
    while True:
        h = buf.find(b"\r\n\r\n")
        if h >= 0:
            head = buf[:h].decode("latin1").lower()
            cl = 0
            for line in head.split("\r\n"):
                if line.startswith("content-length:"):
                    cl = int(line.split(":")[1])
            if len(buf) >= h + 4 + cl:
                buf = buf[h + 4 + cl:]
                break
        d = s.recv(65536)
        if not d:
            sys.exit("closed")
        buf += d
s.close()
