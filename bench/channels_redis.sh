#!/usr/bin/env bash
# usage: bench/channels_redis.sh
#   env: ROUNDS (alternating rounds, default 3), SUBS (default 1000), EVENTS (default 2000), RATE_EVENTS (default 300),
#        RATE (default 100), PUBLISH_EVENTS (sequential POSTs timed one by one, default 2000),
#        IDLE (idle subscribers, default 10000), IDLE_CHANNELS (default 100),
#        BUILD=none with SPOUT_BIN=path (use that binary), SHARED (the directory with bench/fanout),
#        MODES="memory redis2 redis1 redis2b", PHASES="throughput latency publish idle"
# Channels across replicas through Redis against the in-process broker, in the same run, a fresh set of processes
# per run (redis-server included), modes alternating:
#   memory: one spout without Redis; fanout -url S                        (the single-process figure)
#   redis2: redis-server and two spouts with SPOUT_REDIS_URL; fanout -url A -suburls A,B
#           (subscribers spread over both replicas, every publish to A)
#   redis1: redis-server and one spout with SPOUT_REDIS_URL; fanout -url A
#   redis2b: as redis2, but every subscriber on B (fanout -url A -suburls B): A only publishes, B only fans out
#           (a diagnostic: the store-and-announce path without the two replicas' fan-outs competing for the cores)
# Phases:
#   throughput: fanout -subs $SUBS -events $EVENTS       (delivered of N×M, delivered events/s, latency)
#   latency:    fanout -subs $SUBS -events $RATE_EVENTS -rate $RATE   (delivery latency p50/p99 at a steady rate)
#   publish:    bench/channels_publish.py: $PUBLISH_EVENTS sequential POSTs on one keep-alive connection to S or A,
#               no subscriber: publish latency p50/p99 (fanout prints publishes/s only)
#   idle:       bench/channels_idle.py: $IDLE idle SSE subscribers over $IDLE_CHANNELS channels on S or A, RSS and
#               anonymous memory per subscriber (modes memory and redis1 only: it watches one process)
# Also the CPU the spouts and redis-server used in each run. Prints every figure, then the medians and each mode's
# ratio to memory; also written to bench/.out/channels-redis-<timestamp>.txt. Everything binds 127.0.0.1 on free
# ports, Redis keeps nothing on disk (a temporary directory, no RDB, no AOF); every process it starts is stopped on
# exit; every wait is bounded.
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
PUBLISH_EVENTS=${PUBLISH_EVENTS:-2000}
MODES=${MODES:-memory redis2 redis1 redis2b}
PHASES=${PHASES:-throughput latency publish idle}
IDLE=${IDLE:-10000}
IDLE_CHANNELS=${IDLE_CHANNELS:-100}
OUT="$ROOT/bench/.out"
mkdir -p "$OUT"
REPORT="$OUT/channels-redis-$(date -u +%Y%m%dT%H%M%SZ).txt"
WORK=$(mktemp -d)
PIDS=()
stop_all() {
  local pid
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  PIDS=()
}
trap 'stop_all; rm -rf "$WORK"' EXIT

command -v redis-server >/dev/null && command -v redis-cli >/dev/null || {
  echo "installing redis-server and redis-tools" >&2
  apt-get update -qq && apt-get install -y -qq redis-server redis-tools >/dev/null
}
command -v go >/dev/null || { echo "installing golang-go" >&2; apt-get install -y golang-go >/dev/null; }
(cd "$SHARED/bench/fanout" && go build -o "$WORK/fanout" .)
if [ "${BUILD:-}" = none ]; then
  SPOUT=${SPOUT_BIN:?BUILD=none needs SPOUT_BIN}
else
  (cd "$ROOT" && swift build -c release --product spout >/dev/null)
  SPOUT="$ROOT/.build/release/spout"
fi

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
cpu() { awk '{print $14+$15}' "/proc/$1/stat"; }  # user+system ticks (1/100 s)

start_redis() {  # sets REDIS_PORT; its pid in REDIS_PID
  REDIS_PORT=$(free_port)
  mkdir -p "$WORK/redis-$REDIS_PORT"
  redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --dir "$WORK/redis-$REDIS_PORT" --save "" --appendonly no \
    --daemonize no --logfile "$WORK/redis-$REDIS_PORT/log" &
  REDIS_PID=$!
  PIDS+=("$REDIS_PID")
  for _ in $(seq 100); do redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1 && return; sleep 0.1; done
  echo "redis-server did not start" >&2; exit 1
}

start_spout() {  # start_spout NAME [REDIS_URL]: sets URL_NAME and PID_NAME
  local name=$1 redis=${2:-} port
  port=$(free_port)
  SPOUT_LOG_REQUESTS=false SPOUT_REDIS_URL=$redis "$SPOUT" --port "$port" >"$WORK/spout-$name.log" 2>&1 &
  PIDS+=("$!")
  printf -v "PID_$name" %s "$!"
  printf -v "URL_$name" %s "http://127.0.0.1:$port"
  for _ in $(seq 100); do
    if curl -s --max-time 1 "http://127.0.0.1:$port/health" >/dev/null 2>&1; then
      [ -z "$redis" ] && return
      # With Redis: wait (bounded) until both roles' connections are up, so no run starts mid-handshake.
      for _ in $(seq 100); do
        [ "$(curl -s --max-time 1 "http://127.0.0.1:$port/metrics" | grep -c '^spout_redis_up{.*} 1')" -ge 2 ] && return
        sleep 0.1
      done
      echo "spout $name did not connect to Redis; its log:" >&2; tail -5 "$WORK/spout-$name.log" >&2; exit 1
    fi
    sleep 0.1
  done
  echo "spout $name did not start; its log:" >&2; tail -5 "$WORK/spout-$name.log" >&2; exit 1
}

start_mode() {  # start_mode MODE: sets PUB (publish URL), SUBURLS, SERVERS (spout pids)
  case $1 in
    memory) start_spout S; PUB=$URL_S; SUBURLS=$URL_S; SERVERS="$PID_S"; REDIS_PID= ;;
    redis2) start_redis; start_spout A "redis://127.0.0.1:$REDIS_PORT/0"; start_spout B "redis://127.0.0.1:$REDIS_PORT/0"
            PUB=$URL_A; SUBURLS="$URL_A,$URL_B"; SERVERS="$PID_A $PID_B" ;;
    redis2b) start_redis; start_spout A "redis://127.0.0.1:$REDIS_PORT/0"; start_spout B "redis://127.0.0.1:$REDIS_PORT/0"
            PUB=$URL_A; SUBURLS=$URL_B; SERVERS="$PID_A $PID_B" ;;
    redis1) start_redis; start_spout A "redis://127.0.0.1:$REDIS_PORT/0"
            PUB=$URL_A; SUBURLS=$URL_A; SERVERS="$PID_A" ;;
    *) echo "unknown mode $1" >&2; exit 1 ;;
  esac
}

cpu_sum() { local total=0 pid; for pid in $1; do total=$((total + $(cpu "$pid"))); done; echo "$total"; }

{
# This block runs in a subshell (the pipe to tee): it stops its own processes, also on Ctrl-C.
trap stop_all EXIT
trap 'exit 130' INT TERM
echo "# bench/channels_redis.sh $(date -u +%FT%TZ) rounds=$ROUNDS subs=$SUBS events=$EVENTS spout=$SPOUT $(redis-server --version | awk '{print $1, $3}')"
for round in $(seq 1 "$ROUNDS"); do
  for mode in $MODES; do
    for phase in $PHASES; do
      [ "$phase" = idle ] && [ "$mode" != memory ] && [ "$mode" != redis1 ] && continue
      start_mode "$mode"
      echo "# round $round $mode $phase load $(cut -d' ' -f1-3 /proc/loadavg)"
      before=$(cpu_sum "$SERVERS")
      rbefore=0; [ -n "${REDIS_PID:-}" ] && rbefore=$(cpu "$REDIS_PID")
      case $phase in
        throughput) "$WORK/fanout" -url "$PUB" -suburls "$SUBURLS" -subs "$SUBS" -events "$EVENTS" -timeout 120s ;;
        latency) "$WORK/fanout" -url "$PUB" -suburls "$SUBURLS" -subs "$SUBS" -events "$RATE_EVENTS" -rate "$RATE" -timeout 120s ;;
        publish) python3 "$HERE/channels_publish.py" "$PUB" --events "$PUBLISH_EVENTS" ;;
        idle) python3 "$HERE/channels_idle.py" "$PUB" "$IDLE" "$IDLE_CHANNELS" "${SERVERS%% *}" ;;
        *) echo "unknown phase $phase" >&2; exit 1 ;;
      esac | sed "s/^/$mode $round $phase /"
      echo "$mode $round $phase spout_cpu_s: $(( $(cpu_sum "$SERVERS") - before ))e-2"
      [ -n "${REDIS_PID:-}" ] && echo "$mode $round $phase redis_cpu_s: $(( $(cpu "$REDIS_PID") - rbefore ))e-2"
      stop_all
    done
  done
done
} | tee "$REPORT"

python3 - "$REPORT" <<'PY'
import re, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    m = re.match(r"(memory|redis2b|redis2|redis1) (\d+) (\w+) (\w+): ([\d.e-]+)", line)
    if m:
        rows.setdefault((m[3], m[4], m[1]), []).append(float(m[5]))
complete = {}
for line in open(sys.argv[1]):
    m = re.match(r"(memory|redis2b|redis2|redis1) (\d+) (\w+) (?:fanout_delivered|publish_ok): (\d+) of (\d+)", line)
    if m:
        complete.setdefault((m[1], m[3]), []).append(m[4] == m[5])
print("\n# every event delivered (every publish acknowledged) in every run")
for (mode, phase), runs in sorted(complete.items()):
    print(f"{phase} {mode}: {'yes' if all(runs) else 'NO'} ({sum(runs)} of {len(runs)} runs)")
print("\n# medians (ratio: the mode over memory)")
for (phase, metric, mode) in sorted(rows):
    values = rows[(phase, metric, mode)]
    value = statistics.median(values)
    base = rows.get((phase, metric, "memory"))
    ratio = ""
    if mode != "memory" and base and statistics.median(base):
        ratio = f"  ratio {value / statistics.median(base):.2f}"
    runs = " ".join(f"{v:g}" for v in values)
    print(f"{phase} {metric} {mode}: {value:g}  ({runs}){ratio}")
PY
