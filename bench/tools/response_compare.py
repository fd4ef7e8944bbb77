#!/usr/bin/env python3
"""usage: compare.py BIN PORT OUTFILE [extra spout args...]
Starts BIN, sends many request variants (one connection each, Connection: close), records raw responses
(Date normalised), the request log lines (time/duration normalised) and the /metrics request counters."""
import socket, subprocess, sys, time, re, os, signal
binary, port, outfile = sys.argv[1], int(sys.argv[2]), sys.argv[3]
extra = sys.argv[4:]
logf = open(outfile + ".log", "wb")
p = subprocess.Popen([binary, "--port", str(port)] + extra, stdout=logf, stderr=subprocess.DEVNULL)
def dechunk(body):
    out = b""
    while body:
        i = body.find(b"\r\n")
        if i < 0: return out + b"<<partial chunk>>"
        size = int(body[:i].split(b";")[0] or b"0", 16)
        if size == 0: return out + b"<<end>>"
        chunk = body[i + 2:i + 2 + size]
        out += chunk
        if len(chunk) < size: return out + b"<<partial chunk>>"
        body = body[i + 2 + size + 2:]
    return out + b"<<cut>>"
def raw(method, target, headers=(), keep=False):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    lines = [f"{method} {target} HTTP/1.1", "Host: 127.0.0.1"] + list(headers) + ["Connection: close", "", ""]
    s.sendall("\r\n".join(lines).encode("latin1"))
    out = b""
    deadline = time.time() + 10
    while len(out) < 400000 and time.time() < deadline:
        try:
            d = s.recv(65536)
        except socket.timeout:
            out += b"<<timeout>>"; break
        if not d: break
        out += d
    s.close()
    out = out[:400000]
    out = re.sub(rb"(?im)^date: [^\r]*", b"Date: X", out)
    h = out.find(b"\r\n\r\n")
    if h >= 0 and re.search(rb"(?im)^transfer-encoding: chunked", out[:h]):
        body = dechunk(out[h + 4:])
        if body.endswith(b"<<partial chunk>>") or body.endswith(b"<<cut>>"):
            body = body[:3000] + b"<<truncated stream>>"
        out = out[:h + 4] + body
    return out
for _ in range(100):
    try:
        raw("GET", "/health"); break
    except OSError:
        time.sleep(0.05)
J = "Accept: application/json"
cases = []
seqs = ["fibonacci", "naturals", "primes", "factorial", "nope", "Fibonacci", "fib%6fnacci"]
accepts = [None, "application/json", "application/*", "*/*", "text/event-stream", "application/x-ndjson",
           "application/json;q=0.5, text/event-stream;q=0.4", "text/html", "APPLICATION/JSON", "application/json ; q=0",
           "application/json;q=abc", " , ,", "application/xml, */*;q=0.1", "application/problem+json",
           "text/*;q=0.9, application/json;q=0.9", "ÿ/ÿ", "application/json; charset=utf-8"]
queries = ["", "?count=10", "?count=0", "?count=1", "?count=3&start=5", "?start=5&count=3", "?count=10&start=0",
           "?count=1001", "?count=100000", "?count=100001", "?count=-1", "?count=abc", "?count=", "?count",
           "?count=10&count=10", "?cout=5", "?count=10&interval=5", "?count=2&interval=0", "?count=2&interval=1",
           "?count=10&format=json", "?count=3&format=ndjson", "?count=3&format=sse", "?count=3&format=JSON",
           "?count=3&format=xml", "?count=%31%30", "?count=1+0", "?count=10&", "?&count=10", "?count=2&start=100001",
           "?count=2&start=100000", "?count=2&start=99999999999999999999999", "?count=99999999999999999999999",
           "?start=3", "?count=1&start=9223372036854775807", "?count=10&foo=bar&baz", "?=", "?count=5&start=30000",
           "?count=" + "9" * 50, "?" + "x" * 100 + "=1", "?count=3&%63ount=4"]
for s in seqs:
    for q in queries:
        for a in (None, "application/json", "application/x-ndjson"):
            cases.append(("GET", f"/sequences/{s}{q}", [f"Accept: {a}"] if a else []))
for a in accepts:
    for q in ["?count=10", "?count=4&start=2", "", "?count=abc"]:
        cases.append(("GET", f"/sequences/fibonacci{q}", [f"Accept: {a}"] if a else []))
        cases.append(("HEAD", f"/sequences/fibonacci{q}", [f"Accept: {a}"] if a else []))
for leid in ["3", " 3 ", "abc", "-1", "99999999999999999999", "9223372036854775807", "0"]:
    cases.append(("GET", "/sequences/fibonacci?count=6", [f"Last-Event-ID: {leid}"]))
    cases.append(("GET", "/sequences/fibonacci?count=6", [f"Last-Event-ID: {leid}", J]))
paths = ["/health", "/ready", "/sequences", "/health/", "//health", "/nothing", "/sequences/", "/sequences/fibonacci/x",
         "/articles/abc", "/users/x/profile", "/demo/users/1", "/demo/users/999", "/demo/posts?userId=1&_page=1",
         "/demo/posts?bad=1", "/demo/users", "/x" * 100, "/health?x=1", "/%68ealth", "/sequences/%66ibonacci?count=2",
         "*"]
for path in paths:
    for m in ("GET", "HEAD", "POST", "DELETE", "OPTIONS", "PUT"):
        cases.append((m, path, []))
origins = ["Origin: https://a.example", "Origin: https://b.example", "Origin: null"]
for o in origins:
    for path in ["/health", "/sequences/fibonacci?count=3", "/nothing", "/sequences/fibonacci?count=abc"]:
        for m in ("GET", "OPTIONS", "POST"):
            cases.append((m, path, [o, J]))
            cases.append((m, path, [o, J, "Access-Control-Request-Method: GET", "Access-Control-Request-Headers: accept, last-event-id"]))
cases.append(("GET", "/sequences/fibonacci?count=10", [J, "Origin: https://a.example", "Origin: https://b.example"]))
cases.append(("GET", "/sequences/fibonacci?count=10", ["Accept: application/json", "Accept: text/event-stream"]))
cases.append(("GET", "/sequences/fibonacci?count=10", ["accept: application/json"]))
cases.append(("GET", "/sequences/factorial?count=1200&start=10", [J]))
cases.append(("GET", "/sequences/fibonacci?count=3&start=50000", [J]))
cases.append(("GET", "/sequences/fibonacci?count=3&start=50000", []))
with open(outfile, "wb") as out:
    for i, (m, t, h) in enumerate(cases):
        out.write(f"### {i} {m} {t} {h}\n".encode())
        out.write(raw(m, t, h) + b"\n")
    time.sleep(0.2)
    m = raw("GET", "/metrics")
    for line in m.split(b"\n"):
        if re.match(rb"spout_(events_sent|streams_ended)", line) and b"client_gone" not in line:
            continue  # events of cut streams depend on timing
        if line.startswith(b"spout_http_requests_total") or line.startswith(b"spout_http_request_duration_seconds_count") \
           or line.startswith(b"spout_streams_ended") or line.startswith(b"spout_events_sent") or line.startswith(b"spout_active"):
            out.write(line + b"\n")
p.send_signal(signal.SIGTERM)
p.wait(timeout=20)
logf.close()
norm = []
for line in open(outfile + ".log", "rb"):
    line = re.sub(rb'"time":"[^"]*"', b'"time":"T"', line)
    line = re.sub(rb'"duration_ms":[0-9.]+', b'"duration_ms":D', line)
    if b'client_gone' in line:
        line = re.sub(rb'"bytes":[0-9]+,"events":[0-9]+', b'"bytes":B,"events":E', line)
    norm.append(line)
open(outfile + ".log.norm", "wb").writelines(norm)
print(len(cases), "cases;", len(norm), "log lines")
