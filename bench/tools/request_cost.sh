#!/usr/bin/env bash
# usage: bench/tools/request_cost.sh SPOUT_BINARY [PORT]     (env SCOPE=process|loop, default process)
# Instructions per request (callgrind counts instructions, so the figure repeats on a loaded machine) for
# GET /health and GET /sequences/fibonacci?count=10 with Accept: application/json. Each route runs twice in a
# fresh server under callgrind, with 1,000 and with 4,000 sequential keep-alive requests on one connection
# (keepalive_client.py); the difference over 3,000 is the per-request cost, start-up and shutdown cancelled out.
# SCOPE=process counts every thread (Dispatch's wake-ups, the log sink's drain thread too: about 1k from run to
# run); SCOPE=loop counts only what runs inside `Connection.pollReady` (reading, parsing, the route, the answer,
# the log line, the send), which repeats within a few instructions, for comparing two builds.
# valgrind stops in libdispatch's sigsuspend on the main thread, so a shim built here with gcc replaces it with
# a sleep loop (LD_PRELOAD). Needs valgrind, gcc, curl and python3. Loopback only; every wait is bounded.
set -euo pipefail
BIN=$1
PORT=${2:-18295}
COLLECT=()
[ "${SCOPE:-process}" = loop ] && COLLECT=(--toggle-collect='*ConnectionC9pollReady*')
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cat > "$WORK/shim.c" <<'C'
#include <signal.h>
#include <unistd.h>
int sigsuspend(const sigset_t *mask) { (void)mask; for (;;) sleep(1000); return -1; }
C
gcc -shared -fPIC -O2 -o "$WORK/shim.so" "$WORK/shim.c"

instructions() { # name path n [accept] -> total instructions of one server run
  local out="$WORK/cg.$1.$3"
  LD_PRELOAD="$WORK/shim.so" valgrind --tool=callgrind "${COLLECT[@]}" --callgrind-out-file="$out" "$BIN" --port "$PORT" \
    >/dev/null 2>"$WORK/vg.err" &
  local pid=$!
  for _ in $(seq 1 300); do curl -s --max-time 1 "http://127.0.0.1:$PORT/ready" >/dev/null 2>&1 && break; sleep 0.2; done
  python3 "$HERE/keepalive_client.py" "$PORT" "$2" "$3" ${4:+"$4"}
  kill -INT "$pid"; wait "$pid" || true
  awk '/^(summary|totals):/ {print $2; exit}' "$out"
}

for route in health fib; do
  if [ $route = health ]; then path=/health; accept=""; else path="/sequences/fibonacci?count=10"; accept=application/json; fi
  low=$(instructions $route "$path" 1000 $accept)
  high=$(instructions $route "$path" 4000 $accept)
  echo "$route instructions_per_request: $(( (high - low) / 3000 ))"
done
