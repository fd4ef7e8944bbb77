#!/usr/bin/env bash
# usage: bench/http_rps.sh            (env: ROUNDS=3, DURATION=10s, PORT_SWIFT=18080, PORT_GO=18081)
# Builds the HTTPServer benchmark server (release) and the Go peer, then runs the rps.sh load script (bench/README.md)
# against each, one after the other, ROUNDS times alternating, and prints per-round figures, the
# medians and the Swift/Go ratios. Both servers bind 127.0.0.1 only; each is stopped after its run.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
SHARED=${SHARED:-$ROOT/../shared}
[ -d "$SHARED/bench" ] || SHARED=$(cd "$(dirname "$0")/../../shared" && pwd)
RPS="$SHARED/bench/rps.sh"
ROUNDS=${ROUNDS:-3}
PORT_SWIFT=${PORT_SWIFT:-18080}
PORT_GO=${PORT_GO:-18081}

command -v wrk >/dev/null && command -v go >/dev/null || {
  echo "installing wrk and golang-go" >&2
  apt-get update -qq && apt-get install -y -qq wrk golang-go >/dev/null
}

# The bench executables are in their own package (bench/Package.swift), built into .build-bench.
(cd "$ROOT" && swift build -c release --package-path bench --scratch-path .build-bench --product http-bench-server >&2)
SWIFT_BIN="$ROOT/.build-bench/release/http-bench-server"
GO_DIR=$(mktemp -d)
cp "$SHARED/peers/go/main.go" "$SHARED/peers/go/go.mod" "$GO_DIR/"
(cd "$GO_DIR" && GOFLAGS=-mod=mod go build -o go-peer . >&2)
GO_BIN="$GO_DIR/go-peer"

pid=""
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null || true; rm -rf "$GO_DIR"; }
trap cleanup EXIT

wait_port() { # port: wait (bounded) until /health answers
  for _ in $(seq 1 100); do
    curl -s --max-time 1 "http://127.0.0.1:$1/health" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "server on port $1 did not come up" >&2; return 1
}

run_one() { # name binary port
  local name=$1 bin=$2 port=$3 out
  PORT=$port "$bin" >/dev/null 2>&1 &
  pid=$!
  wait_port "$port"
  out=$("$RPS" "http://127.0.0.1:$port")
  kill "$pid"; wait "$pid" 2>/dev/null || true; pid=""
  echo "$out" | sed "s/^/$name /"
}

results=$(mktemp)
for round in $(seq 1 "$ROUNDS"); do
  echo "round $round" >&2
  run_one go "$GO_BIN" "$PORT_GO" | tee -a "$results" >&2
  run_one swift "$SWIFT_BIN" "$PORT_SWIFT" | tee -a "$results" >&2
done

python3 - "$results" <<'PY'
import sys, statistics, collections
vals = collections.defaultdict(list)
for line in open(sys.argv[1]):
    who, name, value, *_ = line.split()
    vals[(who, name.rstrip(':'))].append(float(value))
for metric in ("health_rps", "health_p99", "fib_json_rps", "fib_json_p99"):
    go, sw = statistics.median(vals[("go", metric)]), statistics.median(vals[("swift", metric)])
    unit = "req/s" if metric.endswith("rps") else "ms"
    print(f"{metric}: go {go:.1f} {unit}, swift {sw:.1f} {unit} (medians of {len(vals[('go', metric)])}), "
          f"swift/go {sw / go:.2f}x")
PY
rm -f "$results"
