# Sourced by the .ci checks that need a live Spout: start_spout BINARY LOGFILE starts it on a free loopback port
# (extra settings come from the caller's SPOUT_* environment), waits for /ready (at most 10 s) and sets PORT and
# SPOUT_PID; stop_spout sends SIGTERM to that process and waits for it. Callers `trap stop_spout EXIT`.

start_spout() {
    local binary=$1 log=$2
    PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
    "$binary" --host 127.0.0.1 --port "$PORT" >"$log" 2>&1 &
    SPOUT_PID=$!
    for _ in $(seq 1 100); do
        curl -fsS --max-time 1 "http://127.0.0.1:$PORT/ready" >/dev/null 2>&1 && return 0
        if ! kill -0 "$SPOUT_PID" 2>/dev/null; then
            cat "$log" >&2
            return 1
        fi
        sleep 0.1
    done
    echo "spout did not turn ready on port $PORT within 10 s" >&2
    return 1
}

stop_spout() {
    if [ -n "${SPOUT_PID:-}" ]; then
        kill -TERM "$SPOUT_PID" 2>/dev/null || true
        wait "$SPOUT_PID" 2>/dev/null || true
        SPOUT_PID=
    fi
}
