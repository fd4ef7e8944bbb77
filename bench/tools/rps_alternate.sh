#!/usr/bin/env bash
# usage: bench/tools/rps_alternate.sh ROUNDS NAME=BINARY...    e.g. ... 3 go=/tmp/go-peer spout=.build/release/spout
# Alternates servers: each round starts each server in turn on 127.0.0.1:$PORT (default 18340), runs
# rps.sh (the shared load script bench/service.sh uses; $RPS overrides) against it and stops it. A server
# named `go` gets its port from $PORT (the Go peer); any other is started as `BINARY --port PORT`. Prints rps.sh's lines prefixed with
# the name and the round, and the load average before each run. Loopback only; every wait is bounded.
set -uo pipefail
ROUNDS=$1
shift
PORT=${PORT:-18340}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
SHARED=${SHARED:-$ROOT/../shared}
[ -d "$SHARED/bench" ] || SHARED=$ROOT/../../shared
RPS=${RPS:-$SHARED/bench/rps.sh}
ulimit -n 65536 2>/dev/null || true
for round in $(seq 1 "$ROUNDS"); do
  for spec in "$@"; do
    name=${spec%%=*}
    bin=${spec#*=}
    if [ "$name" = go ]; then PORT=$PORT "$bin" >/dev/null 2>&1 & else "$bin" --port "$PORT" >/dev/null 2>&1 & fi
    pid=$!
    for _ in $(seq 100); do curl -s --max-time 1 "http://127.0.0.1:$PORT/health" >/dev/null 2>&1 && break; sleep 0.1; done
    echo "# round $round $name load $(cut -d' ' -f1-3 /proc/loadavg)"
    "$RPS" "http://127.0.0.1:$PORT" | sed "s/^/$name $round /"
    kill "$pid"
    wait "$pid" 2>/dev/null
  done
done
