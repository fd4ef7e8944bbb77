#!/usr/bin/env bash
# usage: bench/channels_scale.sh
#   env: ROUNDS (alternating rounds, default 3), PHASES="fanout latency multi redis idle",
#        SUBS (subscribers on one channel in one process, default 19000), EVENTS (fanout phase, default 100),
#        RATE (latency phase, events/s, default 20), RATE_EVENTS (default 200),
#        MULTI_SUBS (default 10000), MULTI_PER (channels per subscriber, default 50), MULTI_POOL (default 500),
#        MULTI_EVENTS (default 1000), REPLICAS (default 4), REDIS_SUBS (per replica, default 19000),
#        REDIS_EVENTS (default 50), IDLE (idle subscribers, default 19000), IDLE_CPU_SECONDS (idlecpu phase's
#        window, default 60), DEAD_PEER (idlecpu phase's channels.deadPeerSeconds values, default "30 0"),
#        SOURCES (loopback source addresses, default 127.0.0.1 … 127.0.0.8), BUILD=none with SPOUT_BIN=path
#        (use that binary), SPOUT_ENV (extra VAR=value settings for every spout, space-separated), SYSCALLS=1
#        (fanout and latency phases: the server's write system calls counted by `perf stat` tracepoints),
#        SHARED (the directory with peers/nchan)
# Channels at scale (issue 30), Spout against nginx's nchan module where both can do it, in the same run, a fresh
# server per run, alternating:
#   fanout:  $SUBS subscribers on one channel, $EVENTS events published as fast as the server takes them:
#            every event delivered? delivered events/s (goal: Spout >= 10x nchan)
#   latency: the same subscribers, $RATE_EVENTS events at $RATE/s: delivery latency p50/p99 (goal: Spout's p99 lower),
#            counted from each event's intended publish time (start + k/$RATE; coordinated omission corrected, as
#            wrk2 does: a server whose publish cannot keep the rate is charged for its backlog), and from its send
#            time (`sent_latency`); the achieved publish rate, delivered events/s, the server's CPU and the load
#            generator's (its readers) beside them
#   multi:   Spout only: $MULTI_SUBS subscribers, each on $MULTI_PER channels of a pool of $MULTI_POOL over one
#            GET /subscribe, $MULTI_EVENTS events published round-robin over the pool: each subscriber must get
#            exactly the events of its channels
#   redis:   Spout only: a throwaway redis-server and $REPLICAS spouts with SPOUT_REDIS_URL, $REDIS_SUBS
#            subscribers on each (one channel), $REDIS_EVENTS events published to the first: every event to all
#   idle:    $IDLE idle subscribers on one channel (warm: each has read one event), held: server memory per
#            subscriber, anonymous (smaps_rollup; nginx: master and workers summed, its shared memory zone
#            counted by PSS) and the kernel's: TCP buffer pages (/proc/net/sockstat `mem`) and the slab objects of
#            a socket (/proc/slabinfo: TCP, sock_inode_cache, filp, dentry, eventpoll_epi), both for every socket
#            of the machine, both ends of each connection
#   idlecpu: Spout only: $IDLE idle subscribers held for $IDLE_CPU_SECONDS, once per channels.deadPeerSeconds value
#            of $DEAD_PEER (alternating; 0 turns the dead-peer detection off: no keepalive, no TCP_INFO check):
#            the server's CPU over the window (utime + stime), per second, and its getsockopt and sendto system
#            calls per second (perf stat tracepoints)
# The load generator is bench/tools/scale (Go, built here): it spreads the subscribers over child processes
# (20,000 descriptors a process) and the $SOURCES addresses (ephemeral ports are per source address).
# Prints every figure and the medians / Spout-over-nchan ratios; also written to bench/.out/scale-<timestamp>.txt.
# Servers bind 127.0.0.1 only and are stopped on exit; every wait is bounded.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
SHARED=${SHARED:-$ROOT/../shared}
[ -d "$SHARED/peers" ] || SHARED=$(cd "$ROOT/../../shared" && pwd)
ROUNDS=${ROUNDS:-3}
PHASES=${PHASES:-fanout latency multi redis idle}
SUBS=${SUBS:-19000}
EVENTS=${EVENTS:-100}
RATE=${RATE:-20}
RATE_EVENTS=${RATE_EVENTS:-200}
MULTI_SUBS=${MULTI_SUBS:-10000}
MULTI_PER=${MULTI_PER:-50}
MULTI_POOL=${MULTI_POOL:-500}
MULTI_EVENTS=${MULTI_EVENTS:-1000}
REPLICAS=${REPLICAS:-4}
REDIS_SUBS=${REDIS_SUBS:-19000}
REDIS_EVENTS=${REDIS_EVENTS:-50}
IDLE=${IDLE:-19000}
IDLE_CPU_SECONDS=${IDLE_CPU_SECONDS:-60}
DEAD_PEER=${DEAD_PEER:-30 0}
SPOUT_ENV=${SPOUT_ENV:-}
SOURCES=${SOURCES:-127.0.0.1,127.0.0.2,127.0.0.3,127.0.0.4,127.0.0.5,127.0.0.6,127.0.0.7,127.0.0.8}
OUT="$ROOT/bench/.out"
mkdir -p "$OUT"
REPORT="$OUT/scale-$(date -u +%Y%m%dT%H%M%SZ).txt"
WORK=$(mktemp -d)
PIDS=()
NCHAN_DIR=""
stop_all() {
  local pid
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  PIDS=()
  if [ -n "$NCHAN_DIR" ] && [ -f "$NCHAN_DIR/nginx.pid" ]; then
    local master
    master=$(cat "$NCHAN_DIR/nginx.pid")
    kill "$master" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$master" 2>/dev/null || break; sleep 0.1; done
  fi
  NCHAN_DIR=""
}
trap 'stop_all; rm -rf "$WORK"' EXIT

command -v go >/dev/null || { echo "installing golang-go" >&2; apt-get install -y golang-go >/dev/null; }
command -v redis-server >/dev/null || { echo "installing redis-server" >&2; apt-get install -y redis-server >/dev/null; }
[ -f /usr/lib/nginx/modules/ngx_nchan_module.so ] || {
  echo "installing nginx-light libnginx-mod-nchan" >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y nginx-light libnginx-mod-nchan >/dev/null
}
(cd "$HERE/tools/scale" && go build -o "$WORK/scale" .)
if [ "${BUILD:-}" = none ]; then
  SPOUT=${SPOUT_BIN:?BUILD=none needs SPOUT_BIN}
else
  (cd "$ROOT" && swift build -c release --product spout >/dev/null)
  SPOUT="$ROOT/.build/release/spout"
fi

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
wait_health() {
  for _ in $(seq 100); do curl -s --max-time 1 "http://127.0.0.1:$1/health" >/dev/null 2>&1 && return; sleep 0.1; done
  echo "server on $1 did not start" >&2; exit 1
}
# start_spout PORT [REDIS_URL [VAR=value ...]]: a spout on PORT ($SPOUT_ENV and the settings given added to its
# environment); its pid appended to PIDS and in SPID
start_spout() {
  local port=$1 redis=${2:-}
  shift; shift || true
  # shellcheck disable=SC2086
  env SPOUT_LOG_REQUESTS=false SPOUT_CHANNELS_MAX_SUBSCRIBERS_PER_CHANNEL=20000 SPOUT_REDIS_URL="$redis" $SPOUT_ENV "$@" \
    "$SPOUT" --port "$port" >/dev/null 2>"$WORK/spout-$port.err" &
  SPID=$!
  PIDS+=("$SPID")
  wait_health "$port"
}
# start_nchan PORT: nginx + nchan from $SHARED/peers/nchan; its processes' pids in NPIDS
start_nchan() {
  local line
  line=$(PORT=$1 "$SHARED/peers/nchan/run.sh")
  NCHAN_DIR=$(sed 's/.* dir \([^ ]*\) pid .*/\1/' <<<"$line")
  local master
  master=$(cat "$NCHAN_DIR/nginx.pid")
  NPIDS="$master $(pgrep -P "$master" | tr '\n' ' ')"
}
cpu() { local s=0 p; for p in "$@"; do s=$((s + $(awk '{print $14+$15}' "/proc/$p/stat"))); done; echo $s; }
# memory PIDS...: "anon_kib pss_kib" summed (anonymous: Anonymous; PSS also counts shared memory fairly)
memory() {
  local p
  for p in "$@"; do cat "/proc/$p/smaps_rollup"; done |
    awk '$1=="Anonymous:"{a+=$2} $1=="Pss:"{p+=$2} END{print a, p}'
}
sock_pages() { awk '$1=="TCP:"{for(i=2;i<NF;i++) if($i=="mem") print $(i+1)}' /proc/net/sockstat; }
# The kernel's objects of a socket: the TCP socket, its inode, its file, its dentry, its epoll item (every socket
# of the machine; both ends of a loopback connection)
tcp_slab_kib() {
  awk '$1=="TCP"||$1=="sock_inode_cache"||$1=="filp"||$1=="dentry"||$1=="eventpoll_epi"{s+=$2*$4} END{print int(s/1024)}' \
    /proc/slabinfo 2>/dev/null || echo 0
}
procs_for() { echo $(( ($1 + 8999) / 9000 )); }

run_scale() {  # run_scale NAME LABEL ARGS...: the load generator, its lines prefixed
  local name=$1 label=$2
  shift 2
  "$WORK/scale" -sources "$SOURCES" -timeout 600s "$@" 2>>"$WORK/scale.err" | sed "s/^/$name $round $label /"
}

{
echo "# bench/channels_scale.sh $(date -u +%FT%TZ) rounds=$ROUNDS phases=$PHASES subs=$SUBS events=$EVENTS rate=$RATE rate_events=$RATE_EVENTS spout=$SPOUT spout_env=$SPOUT_ENV"
echo "# uptime: $(uptime)"
echo "# nofile $(ulimit -n), ephemeral ports $(cat /proc/sys/net/ipv4/ip_local_port_range | tr '\t' -), cores $(nproc)"
for round in $(seq 1 "$ROUNDS"); do
  for phase in $PHASES; do
    case $phase in
      fanout | latency)
        for name in nchan spout; do
          port=$(free_port)
          if [ "$name" = nchan ]; then start_nchan "$port"; servers=$NPIDS; raw=(-raw)
          else start_spout "$port"; servers=$SPID; raw=(); fi
          echo "# round $round $name $phase $(uptime)"
          before=$(cpu $servers)
          perf_pid=""
          if [ "${SYSCALLS:-}" = 1 ]; then
            perf stat -x, -e syscalls:sys_enter_sendto,syscalls:sys_enter_write,syscalls:sys_enter_writev \
              -p "$(tr ' ' ',' <<<"$servers" | sed 's/,*$//')" -o "$WORK/perf.out" &
            perf_pid=$!
            sleep 0.5
          fi
          # The server's CPU when the first event is published: what the deliveries cost, without the connections'.
          rm -f "$WORK/cpu0"
          mark="cd /proc && cat $(for p in $servers; do printf '%s/stat ' "$p"; done) | awk '{s+=\$14+\$15} END{print s}' >$WORK/cpu0"
          if [ "$phase" = fanout ]; then
            run_scale "$name" "$phase" "${raw[@]}" -pub "http://127.0.0.1:$port" -subs "$SUBS" \
              -procs "$(procs_for "$SUBS")" -events "$EVENTS" -before-publish "$mark"
          else
            run_scale "$name" "$phase" "${raw[@]}" -pub "http://127.0.0.1:$port" -subs "$SUBS" \
              -procs "$(procs_for "$SUBS")" -events "$RATE_EVENTS" -rate "$RATE" -before-publish "$mark"
          fi
          after=$(cpu $servers)
          echo "$name $round $phase server_cpu_s: $(( after - before ))e-2"
          if [ -s "$WORK/cpu0" ]; then
            echo "$name $round $phase server_publish_cpu_s: $(( after - $(cat "$WORK/cpu0") ))e-2"
          fi
          if [ -n "$perf_pid" ]; then
            kill -INT "$perf_pid" 2>/dev/null || true
            wait "$perf_pid" 2>/dev/null || true
            echo "$name $round $phase server_write_syscalls: $(awk -F, '{s+=$1} END{print s+0}' "$WORK/perf.out")"
          fi
          stop_all
        done
        ;;
      multi)
        port=$(free_port)
        start_spout "$port"
        echo "# round $round spout multi load $(cut -d' ' -f1-3 /proc/loadavg)"
        before=$(cpu "$SPID")
        run_scale spout multi -pub "http://127.0.0.1:$port" -subs "$MULTI_SUBS" -procs "$(procs_for "$MULTI_SUBS")" \
          -per "$MULTI_PER" -channels "$MULTI_POOL" -events "$MULTI_EVENTS"
        echo "spout $round multi server_cpu_s: $(( $(cpu "$SPID") - before ))e-2"
        stop_all
        ;;
      redis)
        rport=$(free_port)
        mkdir -p "$WORK/redis"
        redis-server --port "$rport" --bind 127.0.0.1 --dir "$WORK/redis" --save "" --appendonly no \
          --daemonize no --maxclients 1000 --logfile "$WORK/redis/log" &
        PIDS+=("$!")
        rpid=$!
        for _ in $(seq 100); do redis-cli -p "$rport" ping >/dev/null 2>&1 && break; sleep 0.1; done
        urls=()
        spids=()
        for _ in $(seq "$REPLICAS"); do
          port=$(free_port)
          start_spout "$port" "redis://127.0.0.1:$rport"
          urls+=("http://127.0.0.1:$port")
          spids+=("$SPID")
        done
        total=$((REPLICAS * REDIS_SUBS))
        echo "# round $round spout redis load $(cut -d' ' -f1-3 /proc/loadavg) replicas $REPLICAS subscribers $total"
        before=$(cpu "${spids[@]}")
        rbefore=$(cpu "$rpid")
        run_scale spout redis -pub "${urls[0]}" -suburls "$(IFS=,; echo "${urls[*]}")" -subs "$total" \
          -procs "$(procs_for "$total")" -events "$REDIS_EVENTS"
        echo "spout $round redis server_cpu_s: $(( $(cpu "${spids[@]}") - before ))e-2"
        echo "spout $round redis redis_cpu_s: $(( $(cpu "$rpid") - rbefore ))e-2"
        stop_all
        ;;
      idlecpu)
        for value in $DEAD_PEER; do
          port=$(free_port)
          start_spout "$port" "" "SPOUT_CHANNELS_DEAD_PEER_SECONDS=$value"
          "$WORK/scale" -sources "$SOURCES" -timeout 600s -pub "http://127.0.0.1:$port" -subs "$IDLE" \
            -procs "$(procs_for "$IDLE")" -hold "$((IDLE_CPU_SECONDS + 30))s" >"$WORK/idle.out" 2>>"$WORK/scale.err" &
          gen=$!
          for _ in $(seq 1200); do grep -q scale_ready "$WORK/idle.out" && break; sleep 0.1; done
          sleep 5
          echo "# round $round spout idlecpu dead_peer=$value $(uptime)"
          before=$(cpu "$SPID")
          perf stat -x, -e syscalls:sys_enter_getsockopt,syscalls:sys_enter_sendto -p "$SPID" -o "$WORK/perf.out" \
            sleep "$IDLE_CPU_SECONDS" 2>/dev/null || sleep "$IDLE_CPU_SECONDS"
          used=$(( $(cpu "$SPID") - before ))
          for event in getsockopt sendto; do
            echo "spout $round idlecpu_dp$value ${event}_per_s: $(awk -F, -v e="sys_enter_$event" -v s="$IDLE_CPU_SECONDS" \
              'index($3, e) {printf "%.0f", $1 / s}' "$WORK/perf.out" 2>/dev/null)"
          done
          held=$(awk '$1=="scale_ready:"{print $2}' "$WORK/idle.out")
          kill "$gen" 2>/dev/null || true
          wait "$gen" 2>/dev/null || true
          echo "spout $round idlecpu_dp$value held: ${held:-0}"
          echo "spout $round idlecpu_dp$value server_cpu_ms_per_s: $(awk -v u="$used" -v s="$IDLE_CPU_SECONDS" \
            'BEGIN{printf "%.2f", u * 10 / s}')"
          stop_all
        done
        ;;
      idle)
        [ "$round" = 1 ] || continue
        for name in nchan spout; do
          port=$(free_port)
          if [ "$name" = nchan ]; then start_nchan "$port"; servers=$NPIDS; raw=(-raw)
          else start_spout "$port"; servers=$SPID; raw=(); fi
          sleep 1
          read -r anon0 pss0 <<<"$(memory $servers)"
          sock0=$(sock_pages)
          slab0=$(tcp_slab_kib)
          "$WORK/scale" -sources "$SOURCES" -timeout 600s "${raw[@]}" -pub "http://127.0.0.1:$port" -subs "$IDLE" \
            -procs "$(procs_for "$IDLE")" -hold 20s >"$WORK/idle.out" 2>>"$WORK/scale.err" &
          gen=$!
          for _ in $(seq 1200); do grep -q scale_ready "$WORK/idle.out" && break; sleep 0.1; done
          sleep 5
          read -r anon1 pss1 <<<"$(memory $servers)"
          sock1=$(sock_pages)
          slab1=$(tcp_slab_kib)
          held=$(awk '$1=="scale_ready:"{print $2}' "$WORK/idle.out")
          wait "$gen" || true
          sed "s/^/$name 1 idle /" "$WORK/idle.out"
          python3 - "$name" "${held:-0}" "$anon0" "$anon1" "$pss0" "$pss1" "$sock0" "$sock1" "$slab0" "$slab1" <<'PY'
import sys
name, held = sys.argv[1], int(sys.argv[2])
a0, a1, p0, p1, s0, s1, l0, l1 = map(int, sys.argv[3:])
if held:
    for metric, kib in (("anon", a1 - a0), ("pss", p1 - p0), ("sockstat_mem", (s1 - s0) * 4), ("socket_slab", l1 - l0)):
        print(f"{name} 1 idle {metric}_kib_per_sub: {kib / held:.2f}")
    print(f"{name} 1 idle total_kib_per_sub: {((a1 - a0) + (s1 - s0) * 4 + (l1 - l0)) / held:.2f}")
PY
          stop_all
        done
        ;;
    esac
  done
done
} | tee "$REPORT"

python3 - "$REPORT" <<'PY'
import re, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    m = re.match(r"(nchan|spout) (\d+) (\w+) (\w+): ([\d.e-]+)", line)
    if m:
        rows.setdefault((m[3], m[4], m[1]), []).append(float(m[5]))
print("\n# medians (spout/nchan)")
for (phase, metric, name) in sorted(rows):
    if name != "spout":
        continue
    s = statistics.median(rows[(phase, metric, "spout")])
    n = rows.get((phase, metric, "nchan"))
    n = statistics.median(n) if n else None
    ratio = f"{s / n:.2f}x" if n else "-"
    print(f"{phase} {metric}: spout {s:g}  nchan {n if n is None else f'{n:g}'}  ratio {ratio}  (runs {len(rows[(phase, metric, 'spout')])})")
PY
