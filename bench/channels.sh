#!/usr/bin/env bash
# usage: bench/channels.sh
#   env: ROUNDS (alternating rounds, default 3), SUBS (default 1000), EVENTS (default 2000), RATE_EVENTS (default 300),
#        RATE (default 100), IDLE (idle subscribers, default 10000), IDLE_CHANNELS (default 100),
#        STALL_EVENTS (events published to a channel with one stalled reader, default 20000),
#        BUILD=none with SPOUT_BIN=path (use that binary), SHARED (the directory with peers/go and bench/fanout),
#        PHASES="throughput latency idle"
# Channels fan-out, Spout against the Go peer's /channels in the same run, a fresh server per run, alternating:
#   throughput: fanout -subs $SUBS -events $EVENTS       (delivered of N×M, delivered events/s, latency)
#   latency:    fanout -subs $SUBS -events $RATE_EVENTS -rate $RATE   (delivery latency p50/p99 at a steady rate)
#   idle:       bench/channels_idle.py: $IDLE idle SSE subscribers over $IDLE_CHANNELS channels, RSS and anonymous
#               memory per subscriber; then one stalled subscriber and $STALL_EVENTS events of ~1 KB: memory growth
#               (Spout only for the stall: the Go peer's buffer is 1,024 events per subscriber, also bounded).
# Prints every figure and the medians / Spout-over-Go ratios; also written to bench/.out/channels-<timestamp>.txt.
# Servers bind 127.0.0.1 only and are killed on exit; every wait is bounded.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
SHARED=${SHARED:-$ROOT/../shared}
[ -d "$SHARED/bench" ] || SHARED=$(cd "$ROOT/../../shared" && pwd)
ROUNDS=${ROUNDS:-3}
SUBS=${SUBS:-1000}
EVENTS=${EVENTS:-2000}
RATE_EVENTS=${RATE_EVENTS:-300}
RATE=${RATE:-100}
IDLE=${IDLE:-10000}
IDLE_CHANNELS=${IDLE_CHANNELS:-100}
STALL_EVENTS=${STALL_EVENTS:-20000}
PHASES=${PHASES:-throughput latency idle}
PORT=${PORT:-18360}
OUT="$ROOT/bench/.out"
mkdir -p "$OUT"
REPORT="$OUT/channels-$(date -u +%Y%m%dT%H%M%SZ).txt"
WORK=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$WORK"' EXIT

command -v go >/dev/null || { echo "installing golang-go" >&2; apt-get install -y golang-go >/dev/null; }
(cd "$SHARED/peers/go" && go build -o "$WORK/go-peer" .)
(cd "$SHARED/bench/fanout" && go build -o "$WORK/fanout" .)
if [ "${BUILD:-}" = none ]; then
  SPOUT=${SPOUT_BIN:?BUILD=none needs SPOUT_BIN}
else
  (cd "$ROOT" && swift build -c release --product spout >/dev/null)
  SPOUT="$ROOT/.build/release/spout"
fi

start() {  # start NAME: one server on $PORT, its pid in $PID
  if [ "$1" = go ]; then PORT=$PORT "$WORK/go-peer" >/dev/null 2>&1 &
  else SPOUT_LOG_REQUESTS=false "$SPOUT" --port "$PORT" >/dev/null 2>&1 & fi
  PID=$!
  for _ in $(seq 100); do curl -s --max-time 1 "http://127.0.0.1:$PORT/health" >/dev/null 2>&1 && return; sleep 0.1; done
  echo "server $1 did not start" >&2; exit 1
}
stop() { kill "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; }
cpu() { awk '{print $14+$15}' "/proc/$1/stat"; }

{
echo "# bench/channels.sh $(date -u +%FT%TZ) rounds=$ROUNDS subs=$SUBS events=$EVENTS spout=$SPOUT"
for round in $(seq 1 "$ROUNDS"); do
  for name in go spout; do
    for phase in $PHASES; do
      case $phase in
        throughput) args=(-subs "$SUBS" -events "$EVENTS") ;;
        latency) args=(-subs "$SUBS" -events "$RATE_EVENTS" -rate "$RATE") ;;
        *) continue ;;
      esac
      start "$name"
      echo "# round $round $name $phase load $(cut -d' ' -f1-3 /proc/loadavg)"
      before=$(cpu "$PID")
      "$WORK/fanout" -url "http://127.0.0.1:$PORT" "${args[@]}" -timeout 120s | sed "s/^/$name $round $phase /"
      echo "$name $round $phase server_cpu_s: $(( ($(cpu "$PID") - before) ))e-2"
      stop
    done
  done
done
if [[ " $PHASES " == *" idle "* ]]; then
  for name in go spout; do
    start "$name"
    stall=0
    [ "$name" = spout ] && stall=$STALL_EVENTS
    python3 "$HERE/channels_idle.py" "http://127.0.0.1:$PORT" "$IDLE" "$IDLE_CHANNELS" "$PID" --stall-events "$stall" \
      | sed "s/^/$name idle /"
    stop
  done
fi
} | tee "$REPORT"

python3 - "$REPORT" <<'PY'
import re, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    m = re.match(r"(go|spout) (\d+) (throughput|latency) (\w+): ([\d.e-]+)", line)
    if m:
        rows.setdefault((m[3], m[4], m[1]), []).append(float(m[5]))
print("\n# medians (spout/go)")
for (phase, metric, name) in sorted(rows):
    if name != "spout":
        continue
    s = statistics.median(rows[(phase, metric, "spout")])
    g = rows.get((phase, metric, "go"))
    g = statistics.median(g) if g else None
    ratio = f"{s / g:.2f}x" if g else "-"
    print(f"{phase} {metric}: spout {s:g}  go {g:g}  ratio {ratio}")
PY
