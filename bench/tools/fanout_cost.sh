#!/usr/bin/env bash
# usage: bench/tools/fanout_cost.sh SPOUT_BINARY [PORT]   (env SUBS=200 EVENTS=500)
# Instructions (callgrind) of one-channel fan-out, the shape of bench/channels.sh `throughput`: SUBS subscribers of
# one channel, EVENTS events published (the fanout tool of ../shared/bench, every event checked delivered). Prints
# the whole process's instructions over the events delivered (start-up and connections included: compare binaries
# with the same SUBS and EVENTS), and the part inside ChannelSubscription.deliver excluding what it calls out to
# the subscriber's bridge (inclusive deliver minus inclusive DemandBridge receive). valgrind stops in libdispatch's
# sigsuspend on the main thread, so a shim built here with gcc replaces it with a sleep loop (LD_PRELOAD); the
# profile is dumped with callgrind_control once the run is over, then the server is killed. Needs valgrind, gcc,
# go, curl. Loopback only.
set -euo pipefail
BIN=$1
PORT=${2:-18297}
SUBS=${SUBS:-200}
EVENTS=${EVENTS:-500}
HERE=$(cd "$(dirname "$0")" && pwd)
SHARED=${SHARED:-$HERE/../../../shared}
WORK=$(mktemp -d)
PID=""
trap '[ -n "$PID" ] && kill -KILL "$PID" 2>/dev/null; rm -rf "$WORK"' EXIT
cat > "$WORK/shim.c" <<'C'
#include <signal.h>
#include <unistd.h>
int sigsuspend(const sigset_t *mask) { (void)mask; for (;;) sleep(1000); return -1; }
C
gcc -shared -fPIC -O2 -o "$WORK/shim.so" "$WORK/shim.c"
(cd "$SHARED/bench/fanout" && go build -o "$WORK/fanout" .)
SPOUT_LOG_REQUESTS=false LD_PRELOAD="$WORK/shim.so" valgrind --tool=callgrind --callgrind-out-file="$WORK/cg.out" \
  "$BIN" --port "$PORT" >/dev/null 2>"$WORK/vg.err" &
PID=$!
for _ in $(seq 1 300); do curl -s --max-time 1 "http://127.0.0.1:$PORT/ready" >/dev/null 2>&1 && break; sleep 0.2; done
"$WORK/fanout" -url "http://127.0.0.1:$PORT" -subs "$SUBS" -events "$EVENTS" -timeout 900s | tee "$WORK/fanout.out" \
  | grep -E "delivered|error"
callgrind_control -d "$PID" >/dev/null
for _ in $(seq 1 100); do compgen -G "$WORK/cg.out.*" >/dev/null && break; sleep 0.2; done
dumps=("$WORK"/cg.out.*)
dump=${dumps[0]}
delivered=$(awk '$1=="fanout_delivered:"{print $2}' "$WORK/fanout.out")
total=$(awk '/^(summary|totals):/ {print $2; exit}' "$dump")
callgrind_annotate --inclusive=yes --threshold=100 "$dump" 2>/dev/null >"$WORK/annotate.txt"
inclusive() { awk -v pat="$1" '!done && $0 ~ pat {gsub(",", "", $1); print $1; done = 1}' "$WORK/annotate.txt"; }
[ -n "${SHOW:-}" ] && grep -m1 -E 'ChannelSubscription[^ ]*deliver' "$WORK/annotate.txt" >&2 && grep -m1 -E 'DemandBridge[^ ]*receive' "$WORK/annotate.txt" >&2
deliver=$(inclusive 'ChannelSubscription[^ ]*deliver')
bridge=$(inclusive 'DemandBridge[^ ]*receive')
echo "fanout instructions_total: $total"
echo "fanout instructions_per_delivered_event: $(( total / delivered ))"
echo "fanout deliver_inclusive_per_delivered_event: $(( ${deliver:-0} / delivered ))"
echo "fanout deliver_minus_bridge_per_delivered_event: $(( (${deliver:-0} - ${bridge:-0}) / delivered ))"
