#!/usr/bin/env bash
# usage: bench/tls.sh
#   env: ROUNDS (alternating rounds, default 3), PHASES="handshake sse health idle", COUNT (SSE events, default
#        10000000), HANDSHAKE_SECONDS (default 5), CLIENTS (parallel `openssl s_time`, default 2),
#        DURATION (wrk, default 10s), CONNS (wrk, default 64), IDLE (idle TLS connections, default 10000),
#        IDLE_RUNS (default 3), BUILD=none with SPOUT_BIN=path (use that binary), NGINX (default /usr/sbin/nginx),
#        SHARED (the directory with bench/health.lua and bench/report.lua)
# TLS served by Spout itself against nginx terminating TLS in front of the same Spout (issue 29), in the same run:
# each round starts one spout (plain HTTP on one port, HTTPS on `tls.port`, one ECDSA P-256 certificate made here)
# and one nginx (`worker_processes auto`, its own prefix and config in a temporary directory, TLS on a port of its
# own, proxying to spout's plain port over kept-alive upstream connections with `proxy_buffering off`), then runs
# every phase against the cases in an order that rotates each round:
#   spout_tls    https straight to spout
#   nginx_tls    https to nginx, plain http from nginx to spout
#   spout_plain  http straight to spout (the reference of the SSE goal; no handshakes)
# Phases:
#   handshake  full TLS handshakes per second: $CLIENTS `openssl s_time -new` (no resumption, no request) for
#              $HANDSHAKE_SECONDS s each, at once; their connections summed over the wall time; and the server's
#              CPU time (user + system, /proc/PID/stat; nginx: master and workers) per handshake
#   sse        one fast reader: curl reads GET /sequences/naturals?count=$COUNT to the end; the body's size is
#              checked against the exact size of the events; events/s (goal: spout_tls >= 80% of spout_plain,
#              and ahead of nginx_tls), and the servers' CPU per million events (nginx_tls: nginx and spout)
#   health     GET /health over $CONNS kept-alive connections: wrk -t1 -c$CONNS -d$DURATION (https for the TLS
#              cases; wrk's handshakes are done before its clock's first request)
#   idle       (round 1 only) memory per idle TLS connection of spout: bench/tls_idle_memory.py with $IDLE
#              connections, $IDLE_RUNS runs (a spout of its own per run)
# Prints every figure with the load average, then the medians and the ratios; also written to
# bench/.out/tls-<timestamp>.txt. Servers bind 127.0.0.1 only and are stopped on exit; every wait is bounded.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
SHARED=${SHARED:-$ROOT/../shared}
[ -d "$SHARED/bench" ] || SHARED=$(cd "$ROOT/../../shared" && pwd)
ROUNDS=${ROUNDS:-3}
PHASES=${PHASES:-handshake sse health idle}
COUNT=${COUNT:-10000000}
HANDSHAKE_SECONDS=${HANDSHAKE_SECONDS:-5}
CLIENTS=${CLIENTS:-2}
DURATION=${DURATION:-10s}
CONNS=${CONNS:-64}
IDLE=${IDLE:-10000}
IDLE_RUNS=${IDLE_RUNS:-3}
NGINX=${NGINX:-/usr/sbin/nginx}
OUT="$ROOT/bench/.out"
mkdir -p "$OUT"
REPORT="$OUT/tls-$(date -u +%Y%m%dT%H%M%SZ).txt"
WORK=$(mktemp -d)
SPID=""
NGINX_PID=""
stop_all() {
  if [ -n "$NGINX_PID" ]; then
    kill "$NGINX_PID" 2>/dev/null || true
    wait "$NGINX_PID" 2>/dev/null || true
  fi
  if [ -n "$SPID" ]; then
    kill "$SPID" 2>/dev/null || true
    wait "$SPID" 2>/dev/null || true
  fi
  NGINX_PID=""
  SPID=""
}
trap 'stop_all; rm -rf "$WORK"' EXIT

for tool in openssl curl wrk "$NGINX"; do
  command -v "$tool" >/dev/null || { echo "bench/tls.sh needs $tool" >&2; exit 2; }
done
if [ "${BUILD:-}" = none ]; then
  SPOUT=${SPOUT_BIN:?BUILD=none needs SPOUT_BIN}
else
  (cd "$ROOT" && swift build -c release --product spout >/dev/null)
  SPOUT="$ROOT/.build/release/spout"
fi

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$WORK/key.pem" \
  -out "$WORK/cert.pem" -days 5 -subj /CN=localhost -addext subjectAltName=DNS:localhost,IP:127.0.0.1 2>/dev/null

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
wait_url() {  # wait_url URL: until it answers (bounded)
  for _ in $(seq 100); do
    curl -s --max-time 1 --cacert "$WORK/cert.pem" "$1" >/dev/null 2>&1 && return
    sleep 0.1
  done
  echo "$1 did not answer" >&2; exit 1
}

# start_servers: a spout (PLAIN, TLS ports) and an nginx (NGINX_PORT) in front of its plain port
start_servers() {
  PLAIN=$(free_port); TLS=$(free_port); NGINX_PORT=$(free_port)
  SPOUT_LOG_REQUESTS=false SPOUT_PORT=$PLAIN SPOUT_TLS_PORT=$TLS SPOUT_MAX_CONNECTIONS=$((IDLE + 1000)) \
    SPOUT_TLS_CERTIFICATE_FILE="$WORK/cert.pem" SPOUT_TLS_PRIVATE_KEY_FILE="$WORK/key.pem" \
    "$SPOUT" --host 127.0.0.1 >/dev/null 2>"$WORK/spout.err" &
  SPID=$!
  wait_url "http://127.0.0.1:$PLAIN/health"
  wait_url "https://127.0.0.1:$TLS/health"
  local prefix="$WORK/nginx"
  rm -rf "$prefix"
  mkdir -p "$prefix/logs" "$prefix/tmp"
  cat >"$prefix/nginx.conf" <<EOF
worker_processes auto;
$( [ "$(id -u)" = 0 ] && echo "user root;" )
daemon off;
pid $prefix/nginx.pid;
error_log $prefix/logs/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path $prefix/tmp/body;
  proxy_temp_path $prefix/tmp/proxy;
  fastcgi_temp_path $prefix/tmp/fastcgi;
  uwsgi_temp_path $prefix/tmp/uwsgi;
  scgi_temp_path $prefix/tmp/scgi;
  upstream spout { server 127.0.0.1:$PLAIN; keepalive 64; }
  server {
    listen 127.0.0.1:$NGINX_PORT ssl;
    ssl_certificate $WORK/cert.pem;
    ssl_certificate_key $WORK/key.pem;
    ssl_protocols TLSv1.2 TLSv1.3;
    ssl_ciphers ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305;
    ssl_session_cache off;
    ssl_session_tickets on;
    keepalive_requests 1000000;
    location / {
      proxy_pass http://spout;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
      proxy_read_timeout 300s;
    }
  }
}
EOF
  "$NGINX" -p "$prefix" -c "$prefix/nginx.conf" -e "$prefix/logs/error.log" &
  NGINX_PID=$!
  wait_url "https://127.0.0.1:$NGINX_PORT/health"
}

url_of() {  # url_of CASE PATH
  case $1 in
    spout_tls) echo "https://127.0.0.1:$TLS$2" ;;
    nginx_tls) echo "https://127.0.0.1:$NGINX_PORT$2" ;;
    spout_plain) echo "http://127.0.0.1:$PLAIN$2" ;;
  esac
}
port_of() { case $1 in spout_tls) echo "$TLS" ;; nginx_tls) echo "$NGINX_PORT" ;; esac; }
load() { cut -d' ' -f1-3 /proc/loadavg; }

# The exact body of COUNT events: "id: i\ndata: i\n\n" = 13 + 2 * digits(i) bytes each.
EXPECTED=$(python3 -c "
n=$COUNT; t=0; lo=0; d=1
while lo < n:
    hi=min(n, 10**d); t += (hi-lo)*(13+2*d); lo=hi; d+=1
print(t)")

# cpu_ticks PIDS...: user + system clock ticks (1/100 s) of the processes
cpu_ticks() { local s=0 p; for p in "$@"; do s=$((s + $(awk '{print $14+$15}' "/proc/$p/stat"))); done; echo $s; }
server_pids() {  # server_pids CASE: the processes doing the case's TLS (nginx: master and workers)
  case $1 in
    nginx_tls) echo "$NGINX_PID $(pgrep -P "$NGINX_PID" | tr '\n' ' ')" ;;
    *) echo "$SPID" ;;
  esac
}

run_handshake() {  # CASE
  local port pids=() i start end total=0 servers cpu0 cpu1
  port=$(port_of "$1")
  servers=$(server_pids "$1")
  cpu0=$(cpu_ticks $servers)
  start=$(date +%s.%N)
  for i in $(seq "$CLIENTS"); do
    openssl s_time -connect "127.0.0.1:$port" -new -time "$HANDSHAKE_SECONDS" >"$WORK/stime.$i" 2>&1 &
    pids+=($!)
  done
  for i in "${pids[@]}"; do wait "$i"; done
  end=$(date +%s.%N)
  for i in $(seq "$CLIENTS"); do
    total=$((total + $(awk '/connections in .* real seconds/{print $1; exit}' "$WORK/stime.$i")))
  done
  cpu1=$(cpu_ticks $servers)
  python3 -c "print(f'$1 $round handshakes_per_s: {$total / ($end - $start):.1f}')"
  # The server's CPU per handshake: less sensitive to a loaded machine than the rate, which the clients' own
  # handshake work (on the same two cores) and the scheduler's latency bound.
  python3 -c "print(f'$1 $round server_cpu_us_per_handshake: {($cpu1 - $cpu0) * 1e4 / max(1, $total):.0f}')"
}

run_sse() {  # CASE
  local code size t servers cpu0 cpu1
  servers=$(server_pids "$1")
  [ "$1" = nginx_tls ] && servers="$servers $SPID"
  cpu0=$(cpu_ticks $servers)
  read -r code size t <<<"$(curl -sN --max-time 300 --cacert "$WORK/cert.pem" -o /dev/null \
    -w '%{http_code} %{size_download} %{time_total}' "$(url_of "$1" "/sequences/naturals?count=$COUNT")")"
  # Spout may end the stream with a frame of its own after the events: at least the events' bytes.
  if [ "$code" != 200 ] || [ "$size" -lt "$EXPECTED" ]; then
    echo "$1 $round sse FAILED: http $code, $size bytes (want >= $EXPECTED)" >&2; exit 1
  fi
  cpu1=$(cpu_ticks $servers)
  python3 -c "print(f'$1 $round sse_events_per_s: {$COUNT / $t:.0f}')"
  echo "$1 $round sse_body_bytes: $size"
  # The servers' CPU (nginx_tls: nginx and spout) per million events.
  python3 -c "print(f'$1 $round server_cpu_ms_per_million_events: {($cpu1 - $cpu0) * 10 * 1e6 / $COUNT:.0f}')"
}

run_health() {  # CASE
  local out
  out=$(BENCH_LUA_DIR="$SHARED/bench" wrk -t1 -c"$CONNS" -d"$DURATION" -s "$SHARED/bench/health.lua" \
    "$(url_of "$1" /health)")
  awk -v c="$1" -v r="$round" '
    $1=="WRK_RPS" {print c, r, "health_rps:", $2}
    $1=="WRK_P99_US" {printf "%s %s health_p99_ms: %.3f\n", c, r, $2/1000}
    $1=="WRK_ERRORS" {print c, r, "health_errors:", $2}' <<<"$out"
}

{
echo "# bench/tls.sh $(date -u +%FT%TZ) rounds=$ROUNDS count=$COUNT clients=$CLIENTS conns=$CONNS spout=$SPOUT"
echo "# uptime: $(uptime)"
echo "# $("$NGINX" -v 2>&1), $(openssl version), curl $(curl --version | head -1 | cut -d' ' -f2), cores $(nproc)"
cases=(spout_tls nginx_tls spout_plain)
for round in $(seq "$ROUNDS"); do
  start_servers
  # The order rotates each round, so no case always runs first (or last) on a warm or loaded machine.
  shift_by=$(( (round - 1) % 3 ))
  order=("${cases[@]:$shift_by}" "${cases[@]:0:$shift_by}")
  for phase in $PHASES; do
    for name in "${order[@]}"; do
      case $phase in
        handshake)
          [ "$name" = spout_plain ] && continue
          echo "# round $round $name handshake load $(load)"
          run_handshake "$name" ;;
        sse)
          echo "# round $round $name sse load $(load)"
          run_sse "$name" ;;
        health)
          echo "# round $round $name health load $(load)"
          run_health "$name" ;;
      esac
    done
  done
  stop_all
  if [ "$round" = 1 ] && [[ " $PHASES " == *" idle "* ]]; then
    echo "# round 1 spout_tls idle load $(load)"
    python3 "$HERE/tls_idle_memory.py" "$SPOUT" "$IDLE" "$IDLE_RUNS" | sed 's/^/spout_tls 1 idle /'
  fi
done
echo "# uptime at the end: $(uptime)"
} | tee "$REPORT"

python3 - "$REPORT" <<'PY'
import re, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    m = re.match(r"(spout_tls|nginx_tls|spout_plain) (\d+) (\w+): ([\d.]+)$", line.strip())
    if m:
        rows.setdefault((m[3], m[1]), []).append(float(m[4]))
print("\n# medians")
def med(metric, name):
    values = rows.get((metric, name))
    return statistics.median(values) if values else None
for metric in ("handshakes_per_s", "server_cpu_us_per_handshake", "sse_events_per_s",
               "server_cpu_ms_per_million_events", "health_rps", "health_p99_ms", "health_errors"):
    cells = {name: med(metric, name) for name in ("spout_tls", "nginx_tls", "spout_plain")}
    shown = "  ".join(f"{name} {value:g}" for name, value in cells.items() if value is not None)
    ratios = []
    if cells["spout_tls"] and cells["nginx_tls"]:
        ratios.append(f"spout_tls/nginx_tls {cells['spout_tls'] / cells['nginx_tls']:.2f}x")
    if cells["spout_tls"] and cells["spout_plain"]:
        ratios.append(f"spout_tls/spout_plain {cells['spout_tls'] / cells['spout_plain']:.2f}x")
    if shown:
        runs = len(rows.get((metric, "spout_tls"), []))
        print(f"{metric}: {shown}  {'  '.join(ratios)}  (runs {runs})")
PY
