#!/usr/bin/env bash
# usage: .ci/schemathesis/run.sh [SPOUT_BINARY]
# Runs schemathesis (PyPI; installed with pip when missing) against a live Spout on a free loopback port, with
# the OpenAPI document the service serves at /openapi.json: every operation, every check (exceptions and why in
# schemathesis.toml), a fixed number of examples per operation, a seed, and a time budget. The server runs with
# small sequence limits (the document carries them, so the contract is the same one), which keeps each JSON
# document and each paced stream small. Then a second, shorter pass over the /channels operations on a server with
# publish and subscribe tokens configured (the auth checks). Exits non-zero on any failure; the server logs and
# schemathesis's JUnit reports are left in $OUT (default /tmp/spout-schemathesis).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BIN=${1:-}
OUT=${OUT:-/tmp/spout-schemathesis}
EXAMPLES=${EXAMPLES:-25}
MAX_TIME=${MAX_TIME:-240}
CHANNELS_MAX_TIME=${CHANNELS_MAX_TIME:-90}
SEED=${SEED:-20261203}
mkdir -p "$OUT"

if ! command -v schemathesis >/dev/null 2>&1; then
    python3 -m pip install --quiet schemathesis
fi
schemathesis --version

if [ -z "$BIN" ]; then
    (cd "$ROOT" && swift build --product spout >/dev/null)
    BIN="$ROOT/.build/debug/spout"
fi

. "$ROOT/.ci/lib/spout_server.sh"
trap stop_spout EXIT
SPOUT_SEQUENCES_MAX_COUNT=50 SPOUT_SEQUENCES_MAX_START=500 SPOUT_SEQUENCES_MAX_INTERVAL_MILLISECONDS=20 \
    SPOUT_SHUTDOWN_GRACE_SECONDS=2 SPOUT_LOG_REQUESTS=false start_spout "$BIN" "$OUT/server.log"

status=0
# From $OUT, so that schemathesis's cache stays out of the repository.
(cd "$OUT" && PYTHONPATH="$HERE" SCHEMATHESIS_HOOKS=hooks timeout $((MAX_TIME + 120)) \
    schemathesis --config-file "$HERE/schemathesis.toml" run \
    "http://127.0.0.1:$PORT/openapi.json" \
    --max-examples "$EXAMPLES" --seed "$SEED" --max-time "$MAX_TIME" --request-timeout 10 --workers 2 \
    --no-color --report junit --report-junit-path "$OUT/junit.xml") || status=$?

# The server must have survived the run.
if ! curl -fsS --max-time 2 "http://127.0.0.1:$PORT/health" >/dev/null; then
    echo "schemathesis: the server stopped answering; its log:" >&2
    tail -50 "$OUT/server.log" >&2
    status=1
fi
stop_spout

# The channel routes again, on a server with publish and subscribe tokens configured: the document then declares
# the security schemes, and schemathesis sends the token (one for both lists) and checks that requests without
# it, or with a wrong one, are refused (401/403).
TOKEN=schemathesis-token
SPOUT_CHANNELS_PUBLISH_TOKENS=$TOKEN SPOUT_CHANNELS_SUBSCRIBE_TOKENS=$TOKEN SPOUT_SHUTDOWN_GRACE_SECONDS=2 \
    SPOUT_LOG_REQUESTS=false start_spout "$BIN" "$OUT/server-tokens.log"
(cd "$OUT" && PYTHONPATH="$HERE" SCHEMATHESIS_HOOKS=hooks timeout $((CHANNELS_MAX_TIME + 120)) \
    schemathesis --config-file "$HERE/schemathesis.toml" run \
    "http://127.0.0.1:$PORT/openapi.json" --include-path-regex '^/(channels|subscribe)' -H "Authorization: Bearer $TOKEN" \
    --max-examples "$EXAMPLES" --seed "$SEED" --max-time "$CHANNELS_MAX_TIME" --request-timeout 10 --workers 2 \
    --no-color --report junit --report-junit-path "$OUT/junit-tokens.xml") || status=$?
if ! curl -fsS --max-time 2 "http://127.0.0.1:$PORT/health" >/dev/null; then
    echo "schemathesis: the server with tokens stopped answering; its log:" >&2
    tail -50 "$OUT/server-tokens.log" >&2
    status=1
fi
exit $status
