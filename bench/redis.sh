#!/usr/bin/env bash
# usage: bench/redis.sh            (env: COMMANDS=200000, DEPTHS="1 16 128", ROUNDS=3)
# Pipelined round trips of the Redis client (redis-bench, release, from bench/Package.swift) beside redis-benchmark
# on the same throwaway redis-server (127.0.0.1, a free port, a temporary directory, no persistence): SET and GET
# of a 3-byte value, COMMANDS each run, at each pipeline depth, ROUNDS rounds alternating. One connection for
# redis-bench; redis-benchmark with -c 1 (one connection, like redis-bench) and -P depth.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
COMMANDS=${COMMANDS:-200000}
DEPTHS=${DEPTHS:-"1 16 128"}
ROUNDS=${ROUNDS:-3}

command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null || {
  echo "installing redis-server and redis-tools" >&2
  apt-get update -qq && apt-get install -y -qq redis-server redis-tools >/dev/null
}

(cd "$ROOT" && swift build -c release --package-path bench --scratch-path .build-bench --product redis-bench >&2)
BENCH="$ROOT/.build-bench/release/redis-bench"

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
DIR=$(mktemp -d)
redis-server --port "$PORT" --bind 127.0.0.1 --dir "$DIR" --save "" --appendonly no --daemonize no \
  --logfile "$DIR/log" &
pid=$!
cleanup() { kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -rf "$DIR"; }
trap cleanup EXIT
for _ in $(seq 1 100); do
  redis-cli -p "$PORT" ping >/dev/null 2>&1 && break
  sleep 0.1
done

echo "redis-server $(redis-server --version | awk '{print $3}') on 127.0.0.1:$PORT; $COMMANDS commands per run"
for round in $(seq 1 "$ROUNDS"); do
  for depth in $DEPTHS; do
    echo "round $round depth $depth"
    # redis-benchmark runs -n requests of each test: half the commands as SET, half as GET, as redis-bench does.
    redis-benchmark -p "$PORT" -c 1 -P "$depth" -n $((COMMANDS / 2)) -t set,get -d 3 -q | tr '\r' '\n' \
      | grep 'requests per second' | sed 's/^/  redis-benchmark /'
    "$BENCH" "$PORT" "$COMMANDS" "$depth" | grep '^depth' | sed 's/^/  redis-bench /'
  done
done
