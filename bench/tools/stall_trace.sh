#!/usr/bin/env bash
# usage: bench/tools/stall_trace.sh SPOUT_BINARY OUTDIR [warm]
# Where a stalled SSE reader's memory goes: runs SPOUT_BINARY under the malloc_trace.c preload, serves one
# /health (and with "warm" one count=100000 stream read to the end), then runs the backpressure.py load script (bench/README.md)
# (--pause 3) and snapshots /proc/PID/smaps before the stream and 2.5 s later, marking the allocation trace
# at both points. Prints backpressure.py's growth, the per-mapping smaps diff and, through stall_trace.py,
# the heap per thread (live at each mark, peak between) and the allocations live at the second mark that
# were not at the first, by call site. Diagnostic only: the tracer makes every malloc slow.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
BIN=$1; OUT=$2; mkdir -p "$OUT"; PORT=${PORT:-18195}
SHARED=${SHARED:-$HERE/../../../shared}
cc -O1 -shared -fPIC -o "$OUT/malloc_trace.so" "$HERE/malloc_trace.c" -lpthread
MT_LOG=$OUT/trace.log LD_PRELOAD=$OUT/malloc_trace.so "$BIN" --port "$PORT" >/dev/null 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT
for _ in $(seq 50); do curl -s "http://127.0.0.1:$PORT/health" >/dev/null && break; sleep 0.1; done
if [ "${3:-}" = warm ]; then curl -sN "http://127.0.0.1:$PORT/sequences/naturals?count=100000" >/dev/null; fi
sleep 0.5
cp /proc/$pid/maps "$OUT/maps"
cp /proc/$pid/smaps "$OUT/a.smaps"; echo info > "$OUT/trace.log.ctl"; sleep 0.1
python3 "$SHARED/bench/backpressure.py" "http://127.0.0.1:$PORT" $pid --pause 3 > "$OUT/bp.txt" &
bp=$!
sleep 2.5
cp /proc/$pid/smaps "$OUT/b.smaps"; echo info > "$OUT/trace.log.ctl"; sleep 0.1
wait $bp
grep -E "rss_growth_max|resume_data" "$OUT/bp.txt"
python3 "$HERE/stall_trace.py" "$OUT"
