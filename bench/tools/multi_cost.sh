#!/usr/bin/env bash
# usage: bench/tools/multi_cost.sh SPOUT_BINARY [PORT]   (env SUBS=200 PER=50 POOL=500 EVENTS=500)
# Instructions (callgrind) of multi-channel delivery: SUBS subscribers, each on PER channels of a pool of POOL over
# one GET /subscribe, EVENTS events published round-robin (bench/tools/scale, every event checked delivered); the
# whole process is counted from the end of the warm-up (callgrind_control -z) until the events are delivered, and
# the part spent on the cursor each event carries: inside ChannelCursor.append (writing it whole) and inside
# ChannelMultiSubscription's cursor() (all of it, kept or written: since the cursor is kept between events, append
# runs only when it must be written whole), each over the events delivered. Counts repeat on a loaded machine. valgrind stops in libdispatch's sigsuspend on the main
# thread, so a shim built here with gcc replaces it with a sleep loop (LD_PRELOAD); the profile is dumped with
# callgrind_control once the run is over, then the server is killed. Needs valgrind, gcc, go, curl. Loopback only.
set -euo pipefail
BIN=$1
PORT=${2:-18296}
SUBS=${SUBS:-200}
PER=${PER:-50}
POOL=${POOL:-500}
EVENTS=${EVENTS:-500}
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=$(mktemp -d)
PID=""
trap '[ -n "$PID" ] && kill -KILL "$PID" 2>/dev/null; rm -rf "$WORK"' EXIT
cat > "$WORK/shim.c" <<'C'
#include <signal.h>
#include <unistd.h>
int sigsuspend(const sigset_t *mask) { (void)mask; for (;;) sleep(1000); return -1; }
C
gcc -shared -fPIC -O2 -o "$WORK/shim.so" "$WORK/shim.c"
(cd "$HERE/scale" && go build -o "$WORK/scale" .)
SPOUT_LOG_REQUESTS=false LD_PRELOAD="$WORK/shim.so" valgrind --tool=callgrind --callgrind-out-file="$WORK/cg.out" \
  "$BIN" --port "$PORT" >/dev/null 2>"$WORK/vg.err" &
PID=$!
for _ in $(seq 1 300); do curl -s --max-time 1 "http://127.0.0.1:$PORT/ready" >/dev/null 2>&1 && break; sleep 0.2; done
"$WORK/scale" -pub "http://127.0.0.1:$PORT" -subs "$SUBS" -per "$PER" -channels "$POOL" -events "$EVENTS" \
  -timeout 900s -before-publish "callgrind_control -z $PID >/dev/null" | tee "$WORK/scale.out" | grep -E "delivered|error"
callgrind_control -d "$PID" >/dev/null
for _ in $(seq 1 100); do compgen -G "$WORK/cg.out.*" >/dev/null && break; sleep 0.2; done
dumps=("$WORK"/cg.out.*)
dump=${dumps[0]}
delivered=$(awk '$1=="scale_delivered:"{print $2}' "$WORK/scale.out")
total=$(awk '/^(summary|totals):/ {print $2; exit}' "$dump")
cursor=$(callgrind_annotate --inclusive=yes "$dump" 2>/dev/null | awk '!done && /ChannelCursor.*append_2to/ && !/appendBase36|appendKey/ {gsub(",", "", $1); print $1; done = 1}')
echo "multi instructions_total: $total"
echo "multi instructions_per_delivered_event: $(( total / delivered ))"
cursor_all=$(callgrind_annotate --inclusive=yes "$dump" 2>/dev/null | awk '!done && /ChannelMultiSubscription.*cursor/ {gsub(",", "", $1); print $1; done = 1}')
echo "multi cursor_instructions_per_delivered_event: $(( ${cursor:-0} / delivered ))"
echo "multi cursor_method_instructions_per_delivered_event: $(( ${cursor_all:-0} / delivered ))"
