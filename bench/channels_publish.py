#!/usr/bin/env python3
"""usage: channels_publish.py BASE_URL [--events N] [--channel NAME] [--timeout S]

Publish latency: N sequential `POST BASE_URL/channels/NAME/events` of `{"data":<i>}` on one keep-alive connection
(HTTP/1.1), each timed from the request's first byte to the end of its response. Prints, one figure a line:

    publish_ok: K of N              (2xx answers; a non-2xx answer is counted and the loop goes on)
    publish_p50_ms / publish_p99_ms / publish_max_ms
    publish_per_s: R                (N / the loop's wall time)

Talks only to the given loopback URL; N is bounded by --events and every request by --timeout.
"""
import argparse
import http.client
import time
import urllib.parse


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("url")
    ap.add_argument("--events", type=int, default=1000)
    ap.add_argument("--channel", default=f"publish-{time.time_ns()}")
    ap.add_argument("--timeout", type=float, default=10.0)
    args = ap.parse_args()
    base = urllib.parse.urlsplit(args.url)
    path = f"/channels/{args.channel}/events"
    headers = {"Content-Type": "application/json"}

    connection = http.client.HTTPConnection(base.hostname, base.port, timeout=args.timeout)
    latencies = []
    ok = 0
    start = time.perf_counter()
    for i in range(args.events):
        body = b'{"data":%d}' % i
        began = time.perf_counter()
        try:
            connection.request("POST", path, body=body, headers=headers)
            response = connection.getresponse()
            response.read()
        except (OSError, http.client.HTTPException):
            connection.close()
            connection = http.client.HTTPConnection(base.hostname, base.port, timeout=args.timeout)
            continue
        latencies.append(time.perf_counter() - began)
        if 200 <= response.status < 300:
            ok += 1
    elapsed = time.perf_counter() - start
    connection.close()

    latencies.sort()

    def pct(p):
        if not latencies:
            return 0.0
        return latencies[int(p * (len(latencies) - 1))] * 1000

    print(f"publish_ok: {ok} of {args.events}")
    print(f"publish_p50_ms: {pct(0.5):.3f}")
    print(f"publish_p99_ms: {pct(0.99):.3f}")
    print(f"publish_max_ms: {pct(1):.3f}")
    print(f"publish_per_s: {args.events / elapsed:.0f}")


if __name__ == "__main__":
    main()
