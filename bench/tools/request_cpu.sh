#!/usr/bin/env bash
# usage: bench/tools/request_cpu.sh SPOUT_BINARY... (env ROUNDS=3, PORT=18390, GO_BIN=path to a built Go peer)
# Server CPU time per request, read from /proc/PID/stat around `wrk -t1 -c64 -d5s` on GET /health and on
# GET /sequences/fibonacci?count=10 (Accept: application/json), a fresh server per measurement, binaries in
# turn, ROUNDS rounds. CPU per request is steadier than req/s on a shared machine. With GO_BIN set, the Go
# peer (bench/README.md) is measured in the same rounds. Needs wrk, curl, python3. Loopback only.
set -euo pipefail
ROUNDS=${ROUNDS:-3}
PORT=${PORT:-18390}
TICKS=$(getconf CLK_TCK)
binaries=("$@")
[ -n "${GO_BIN:-}" ] && binaries+=("$GO_BIN")
for round in $(seq 1 "$ROUNDS"); do
  for bin in "${binaries[@]}"; do
    for route in health fib; do
      if [ "$bin" = "${GO_BIN:-}" ]; then PORT=$PORT "$bin" >/dev/null 2>&1 & else "$bin" --port "$PORT" >/dev/null 2>&1 & fi
      pid=$!
      for _ in $(seq 1 50); do curl -s --max-time 1 "http://127.0.0.1:$PORT/health" >/dev/null 2>&1 && break; sleep 0.1; done
      read -r u0 s0 < <(awk '{print $14, $15}' "/proc/$pid/stat")
      if [ $route = health ]; then
        out=$(wrk -t1 -c64 -d5s "http://127.0.0.1:$PORT/health")
      else
        out=$(wrk -t1 -c64 -d5s -H 'Accept: application/json' "http://127.0.0.1:$PORT/sequences/fibonacci?count=10")
      fi
      read -r u1 s1 < <(awk '{print $14, $15}' "/proc/$pid/stat")
      kill "$pid"; wait "$pid" 2>/dev/null || true
      n=$(echo "$out" | awk '/requests in/ {print $1}')
      rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
      python3 -c "import sys; u0,s0,u1,s1,n,t=map(float,sys.argv[1:7]); print(f'round $round $(basename "$bin") $route user_us_per_request {(u1-u0)/t*1e6/n:.2f} sys_us_per_request {(s1-s0)/t*1e6/n:.2f} rps $rps')" \
        "$u0" "$s0" "$u1" "$s1" "$n" "$TICKS"
    done
  done
done
