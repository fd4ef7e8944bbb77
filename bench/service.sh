#!/usr/bin/env bash
# usage: bench/service.sh
#   env: ROUNDS (rounds of the heavy phases sse_many/backpressure, default 1),
#        LIGHT_ROUNDS (rounds of sse_throughput/rps, default 3), MANY (sse_many N, default 10000),
#        RUNS (timed reads per sse_throughput round, default 3), PORT_SPOUT=18090, PORT_GO=18091,
#        BUILD=cmo|plain (plain skips the CMO build), SHARED (the directory with the Go peer and the load scripts, bench/README.md),
#        PHASES="throughput many backpressure backpressure_warm rps",
#        WARM_COUNT (events of the warm-up read before backpressure_warm, default 100000),
#        SPOUT_BASE (optional: a second spout binary, e.g. the build before a change, run as "base" in
#        every round next to go and spout, on PORT_BASE=18092; the summary adds spout/base ratios),
#        BUILD=none with SPOUT_BIN=path (use that binary, build nothing but the Go peer)
# Builds `spout` in release with cross-module optimization (scratch .build-release-cmo; falls back
# to a plain release build in .build-release if that build fails, and says so) and the Go peer from
# Go peer, then runs the load scripts sse_throughput.sh, sse_many.py, backpressure.py, rps.sh (bench/README.md)
# against the Go peer and Spout, one after the other (a fresh server per run), alternating rounds.
# Spout runs with its defaults (request log on, stdout to /dev/null). Prints every figure and the
# medians / Spout-over-Go ratios, and writes them to bench/.out/service-<timestamp>.txt.
# backpressure runs backpressure.py against a cold server (nothing streamed yet: first-use costs such as
# code pages faulted in count as growth); backpressure_warm first reads one short stream to the end
# (GET /sequences/naturals?count=$WARM_COUNT), identically for both servers, so the growth is what a
# stalled connection costs. sse_many rounds that held fewer than MANY connections are reported but left
# out of the rss_per_connection median (a per-connection figure over fewer connections is not comparable).
# Servers bind 127.0.0.1 only and are killed on exit.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
SHARED=${SHARED:-$ROOT/../shared}
[ -d "$SHARED/bench" ] || SHARED=$(cd "$(dirname "$0")/../../shared" && pwd)
BENCH="$SHARED/bench"
ROUNDS=${ROUNDS:-1}
LIGHT_ROUNDS=${LIGHT_ROUNDS:-3}
MANY=${MANY:-10000}
export RUNS=${RUNS:-3}
PORT_SPOUT=${PORT_SPOUT:-18090}
PORT_GO=${PORT_GO:-18091}
PHASES=${PHASES:-throughput many backpressure backpressure_warm rps}
WARM_COUNT=${WARM_COUNT:-100000}

command -v wrk >/dev/null && command -v go >/dev/null && command -v curl >/dev/null || {
  echo "installing wrk, golang-go and curl" >&2
  apt-get update -qq && apt-get install -y -qq wrk golang-go curl >/dev/null
}

# 10,000 sockets on each end: raise the descriptor limit (inherited by the servers).
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
echo "ulimit -n: $(ulimit -n)" >&2

PORT_BASE=${PORT_BASE:-18092}
SPOUT_BASE=${SPOUT_BASE:-}
BUILD_KIND=cmo
if [ "${BUILD:-cmo}" = none ]; then
  [ -x "${SPOUT_BIN:-}" ] || { echo "BUILD=none needs SPOUT_BIN=an executable spout" >&2; exit 2; }
  BUILD_KIND="prebuilt"
elif [ "${BUILD:-cmo}" = cmo ] && (cd "$ROOT" && swift build -c release --product spout -Xswiftc -cross-module-optimization \
      --scratch-path .build-release-cmo >&2); then
  SPOUT_BIN="$ROOT/.build-release-cmo/release/spout"
else
  if [ "${BUILD:-cmo}" = cmo ]; then
    echo "WARNING: the -cross-module-optimization release build FAILED; falling back to a plain" \
         "release build (.build-release)" >&2
    BUILD_KIND=plain-release-fallback-cmo-build-failed
  else
    BUILD_KIND=plain-release
  fi
  (cd "$ROOT" && swift build -c release --product spout --scratch-path .build-release >&2)
  SPOUT_BIN="$ROOT/.build-release/release/spout"
fi
GO_DIR=$(mktemp -d)
cp "$SHARED"/peers/go/*.go "$SHARED/peers/go/go.mod" "$GO_DIR/"
(cd "$GO_DIR" && GOFLAGS=-mod=mod go build -o go-peer . >&2)
GO_BIN="$GO_DIR/go-peer"

mkdir -p "$HERE/.out"
OUT="$HERE/.out/service-$(date -u +%Y%m%dT%H%M%SZ).txt"
RESULTS=$(mktemp)
pid=""
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$GO_DIR" "$RESULTS"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

wait_port() { # port: wait (bounded) until /health answers
  for _ in $(seq 1 100); do
    curl -s --max-time 1 "http://127.0.0.1:$1/health" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "server on port $1 did not come up" >&2; return 1
}

start() { # who -> sets pid, port
  case $1 in
    spout) port=$PORT_SPOUT; "$SPOUT_BIN" --port "$port" >/dev/null 2>>"$HERE/.out/spout-stderr.log" & ;;
    go)    port=$PORT_GO; PORT=$port "$GO_BIN" >/dev/null 2>&1 & ;;
    base)  port=$PORT_BASE; "$SPOUT_BASE" --port "$port" >/dev/null 2>>"$HERE/.out/spout-stderr.log" & ;;
  esac
  pid=$!
  wait_port "$port"
}
stop() { kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; pid=""; }

backpressure_split() { # url pid: backpressure.py's lines unchanged, plus its RSS growth split into
  # anonymous memory (heap, stacks) and file-backed pages (code and data of the binary and libraries),
  # from /proc/PID/smaps_rollup: a snapshot when the script reports its baseline (rss_before), samples
  # every 0.1 s until it reports the end of the pause (rss_max_during_pause), and a snapshot then.
  # rss_growth_max_anon / _file: the largest growth of each over the pause (not necessarily at the same
  # sample); rss_growth_at_max_anon / _file: the split at the sample with the largest total growth;
  # rss_growth_end_anon / _file: at the end of the pause.
  python3 - "$BENCH/backpressure.py" "$1" "$2" <<'PY'
import subprocess, sys, threading
script, url, pid = sys.argv[1:4]
def rollup():
    v = {}
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 2 and parts[0] in ("Rss:", "Anonymous:"):
                v[parts[0]] = int(parts[1])
    return v["Anonymous:"], v["Rss:"] - v["Anonymous:"]
proc = subprocess.Popen([sys.executable, "-u", script, url, pid], stdout=subprocess.PIPE,
                        stderr=subprocess.STDOUT, text=True)
base = None; samples = []; end = None; stop = threading.Event()
def sample():
    while not stop.wait(0.1):
        samples.append(rollup())
sampler = threading.Thread(target=sample, daemon=True)
for line in proc.stdout:
    print(line, end="", flush=True)
    name = line.split(":", 1)[0]
    if name == "rss_before" and base is None:
        base = rollup(); samples.append(base); sampler.start()
    elif name == "rss_max_during_pause" and base is not None and end is None:
        stop.set(); sampler.join(); end = rollup(); samples.append(end)
rc = proc.wait()
if base is not None and end is not None:
    anon0, file0 = base
    top = max(samples, key=lambda s: s[0] + s[1])
    for name, value in (("rss_growth_max_anon", max(s[0] for s in samples) - anon0),
                        ("rss_growth_max_file", max(s[1] for s in samples) - file0),
                        ("rss_growth_at_max_anon", top[0] - anon0), ("rss_growth_at_max_file", top[1] - file0),
                        ("rss_growth_end_anon", end[0] - anon0), ("rss_growth_end_file", end[1] - file0)):
        print(f"{name}: {value} KiB", flush=True)
sys.exit(rc)
PY
}

run_phase() { # phase who: one fresh server, one script run; lines "phase who name: value unit"
  local phase=$1 who=$2 url out rc=0
  start "$who"
  url="http://127.0.0.1:$port"
  case $phase in
    throughput)   out=$("$BENCH/sse_throughput.sh" "$url" 2>&1) || rc=$? ;;
    many)         out=$(python3 "$BENCH/sse_many.py" "$url" "$MANY" "$pid" 2>&1) || rc=$? ;;
    backpressure) out=$(backpressure_split "$url" "$pid" 2>&1) || rc=$? ;;
    backpressure_warm)
      # Same script, after one short stream read to the end on this server.
      curl -sN --max-time 60 -o /dev/null "$url/sequences/naturals?count=$WARM_COUNT" || rc=$?
      out=$(backpressure_split "$url" "$pid" 2>&1) || rc=$? ;;
    rps)          out=$("$BENCH/rps.sh" "$url" 2>&1) || rc=$? ;;
  esac
  stop
  [ "$rc" = 0 ] || out="$out"$'\n'"FAILED: exit $rc"
  echo "$out" | sed "s/^/$phase $who /" | tee -a "$RESULTS"
}

{
  echo "# bench/service.sh $(date -u +%FT%TZ) spout build: $BUILD_KIND ($SPOUT_BIN)${SPOUT_BASE:+, base: $SPOUT_BASE}"
  echo "# host: $(nproc) cores, ROUNDS=$ROUNDS LIGHT_ROUNDS=$LIGHT_ROUNDS RUNS=$RUNS MANY=$MANY"
} | tee -a "$RESULTS"
for phase in $PHASES; do
  case $phase in throughput|rps) n=$LIGHT_ROUNDS ;; *) n=$ROUNDS ;; esac
  for round in $(seq 1 "$n"); do
    echo "== $phase round $round/$n" >&2
    if [ $((round % 2)) = 1 ]; then order="go spout${SPOUT_BASE:+ base}"; else order="${SPOUT_BASE:+base }spout go"; fi
    for who in $order; do run_phase "$phase" "$who"; done
  done
done

python3 - "$RESULTS" "$MANY" <<'PY' | tee -a "$RESULTS"
import sys, statistics, collections
vals = collections.defaultdict(list); text = collections.defaultdict(list); failed = []
many = int(sys.argv[2]); held = {}; partial = collections.defaultdict(list)
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) < 4 or line.startswith("#"):
        continue
    phase, who, name, value = f[0], f[1], f[2].rstrip(":"), f[3]
    if name == "FAILED":
        failed.append(f"{phase} {who}")
    if phase == "many" and name == "held_open":
        held[who] = float(value)  # sse_many prints held_open before rss_per_connection
    if phase == "many" and name == "rss_per_connection" and held.get(who, 0) < many:
        partial[who].append(f"{value} KiB over {held.get(who, 0):.0f} held")
        continue
    try:
        vals[(phase, who, name)].append(float(value))
    except ValueError:
        text[(phase, who, name)].append(value)
def med(p, w, n):
    v = vals.get((p, w, n)); return statistics.median(v) if v else None
def fmt(x, nd=1): return "n/a" if x is None else f"{x:,.{nd}f}"
def ratio(a, b): return "n/a" if a is None or b in (None, 0) else f"{a / b:.2f}x"
print("== summary (medians over rounds; ratio = spout/go)")
rows = [("throughput", "sse_events_per_s_median", "events/s", 0, "target spout/go >= 2.5"),
        ("throughput", "sse_MB_per_s_median", "MB/s", 1, ""),
        ("many", "held_open", "connections", 0, ""),
        ("many", "closed_by_server", "connections", 0, ""),
        ("many", "rss_growth_max", "KiB", 0, ""),
        ("many", "rss_per_connection", "KiB", 1, "target spout < 16 KiB"),
        ("many", "server_cpu_during_hold", "s", 2, ""),
        ("backpressure", "rss_growth_max", "KiB", 0, "target spout < 64 KiB"),
        ("backpressure", "rss_growth_after_first_1s", "KiB", 0, ""),
        ("backpressure", "server_cpu_during_pause", "s", 3, ""),
        ("backpressure", "rss_growth_max_anon", "KiB", 0, "anonymous (heap, stacks)"),
        ("backpressure", "rss_growth_max_file", "KiB", 0, "file-backed (code pages)"),
        ("backpressure", "rss_growth_end_anon", "KiB", 0, ""),
        ("backpressure", "rss_growth_end_file", "KiB", 0, ""),
        ("backpressure_warm", "rss_growth_max", "KiB", 0, "target spout < 64 KiB (after one warm-up stream)"),
        ("backpressure_warm", "rss_growth_after_first_1s", "KiB", 0, ""),
        ("backpressure_warm", "server_cpu_during_pause", "s", 3, ""),
        ("backpressure_warm", "rss_growth_max_anon", "KiB", 0, "anonymous (heap, stacks)"),
        ("backpressure_warm", "rss_growth_max_file", "KiB", 0, "file-backed (code pages)"),
        ("backpressure_warm", "rss_growth_end_anon", "KiB", 0, ""),
        ("backpressure_warm", "rss_growth_end_file", "KiB", 0, ""),
        ("rps", "health_rps", "req/s", 0, ""), ("rps", "health_p99", "ms", 2, ""),
        ("rps", "fib_json_rps", "req/s", 0, ""), ("rps", "fib_json_p99", "ms", 2, "")]
for p, n, unit, nd, note in rows:
    g, s = med(p, "go", n), med(p, "spout", n)
    if g is None and s is None:
        continue
    k = len(vals.get((p, "spout", n), []))
    vs = vals.get((p, "spout", n), []); vg = vals.get((p, "go", n), [])
    spread = (f" [go {fmt(min(vg), nd)}–{fmt(max(vg), nd)}, spout {fmt(min(vs), nd)}–{fmt(max(vs), nd)}]"
              if len(vs) > 1 and vg else "")
    b = med(p, "base", n)
    vb = vals.get((p, "base", n), [])
    versus_base = (f"; base {fmt(b, nd)} {unit}" + (f" [{fmt(min(vb), nd)}–{fmt(max(vb), nd)}]" if len(vb) > 1 else "")
                   + f", spout/base {ratio(s, b)}, base/go {ratio(b, g)}") if b is not None else ""
    print(f"{p}.{n}: go {fmt(g, nd)} {unit}, spout {fmt(s, nd)} {unit} (n={k}), spout/go {ratio(s, g)}" + spread
          + versus_base + (f"  [{note}]" if note else ""))
for p in ("backpressure", "backpressure_warm"):
    for who in ("go", "spout", "base"):
        t = text.get((p, who, "resume_data_correct"))
        if t:
            print(f"{p}.resume_data_correct: {who} {' '.join(t)}")
for who, runs in partial.items():
    print(f"many.rss_per_connection EXCLUDED for {who} (fewer than {many} held): {'; '.join(runs)}")
for x in failed:
    print(f"FAILED: {x} (see its output above)")
PY
cp "$RESULTS" "$OUT"
echo "written: $OUT" >&2
