#!/usr/bin/env bash
# usage: bench/tools/stream_sndbuf.sh SPOUT_BINARY
# What limits.streamSendBufferBytes (SO_SNDBUF of a streaming connection) costs and saves: for each value in
# VALUES (0 = the kernel's autotuning), alternating, ROUNDS rounds, a fresh server per measurement:
#   - one fast reader's SSE throughput: the shared sse_throughput.sh (COUNT events, RUNS timed passes);
#   - N stalled readers (each read WARM bytes at full speed, then stopped; SO_RCVBUF fixed at RCVBUF): kernel
#     TCP memory (/proc/net/sockstat), the server's send queues (ss) and server RSS per reader:
#     stalled_kernel_memory.py.
# Then the median of each figure per value. Env: VALUES ("131072 0"), ROUNDS (2), N (100), WARM (4194304),
# RCVBUF (65536), COUNT (2000000), RUNS (3), PORT (18190). Loopback only; servers are killed on exit.
set -euo pipefail
BIN=${1:?usage: stream_sndbuf.sh SPOUT_BINARY}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
SHARED=${SHARED:-$ROOT/../shared}
[ -d "$SHARED/bench" ] || { echo "no shared bench scripts at $SHARED/bench" >&2; exit 2; }
VALUES=${VALUES:-131072 0}
ROUNDS=${ROUNDS:-2}
N=${N:-100}
WARM=${WARM:-4194304}
RCVBUF=${RCVBUF:-65536}
export COUNT=${COUNT:-2000000} RUNS=${RUNS:-3}
PORT=${PORT:-18190}
pid=
stop() { [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; pid=; }
trap stop EXIT
start() { # value
  SPOUT_PORT=$PORT SPOUT_LOG_REQUESTS=false SPOUT_LIMITS_STREAM_SEND_BUFFER_BYTES=$1 "$BIN" >/dev/null 2>&1 &
  pid=$!
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$PORT/health" >/dev/null && return; sleep 0.1; done
  echo "spout did not start" >&2; exit 1
}
RESULTS=$(mktemp)
for round in $(seq "$ROUNDS"); do
  for value in $VALUES; do
    echo "== round $round, streamSendBufferBytes=$value" >&2
    start "$value"
    "$SHARED/bench/sse_throughput.sh" "http://127.0.0.1:$PORT" | sed "s/^/$value /" | tee -a "$RESULTS"
    stop
    start "$value"
    python3 "$HERE/stalled_kernel_memory.py" "http://127.0.0.1:$PORT" "$N" "$pid" "$WARM" "$RCVBUF" | sed "s/^/$value /" \
      | tee -a "$RESULTS"
    stop
  done
done
echo "== medians over $ROUNDS rounds (N=$N stalled readers, WARM=$WARM bytes each)"
python3 - "$RESULTS" <<'PY'
import statistics, sys
from collections import defaultdict
vals = defaultdict(list)
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) >= 3:
        try:
            vals[(f[0], f[1].rstrip(":"))].append(float(f[2]))
        except ValueError:
            pass
for (value, name), xs in sorted(vals.items()):
    print(f"streamSendBufferBytes={value} {name}: {statistics.median(xs):.6g} ({' '.join(f'{x:.4g}' for x in xs)})")
PY
rm -f "$RESULTS"
