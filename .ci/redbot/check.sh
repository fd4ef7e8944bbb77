#!/usr/bin/env bash
# usage: .ci/redbot/check.sh [SPOUT_BINARY]
# REDbot (PyPI `redbot`, lint for HTTP; pip-installed when missing) on GET /health, a JSON sequence,
# /articles/1 and /metrics of a live Spout on a free loopback port. REDbot fetches each resource, then checks
# its conditional requests, ranges and gzip negotiation against it; any note of level WARN or BAD fails the
# check, and every note is printed. About 10 s.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BIN=${1:-}
OUT=${OUT:-/tmp/spout-redbot}
mkdir -p "$OUT"

if ! command -v redbot >/dev/null 2>&1; then
    python3 -m pip install --quiet redbot
fi
if [ -z "$BIN" ]; then
    (cd "$ROOT" && swift build --product spout >/dev/null)
    BIN="$ROOT/.build/debug/spout"
fi

. "$ROOT/.ci/lib/spout_server.sh"
trap stop_spout EXIT
SPOUT_LOG_REQUESTS=false start_spout "$BIN" "$OUT/server.log"

status=0
for path in /health "/sequences/fibonacci?count=300&format=json" /articles/1 /metrics; do
    url="http://127.0.0.1:$PORT$path"
    timeout 60 redbot -o har "$url" >"$OUT/result.har"
    python3 "$HERE/notes.py" "$url" "$OUT/result.har" || status=1
done
exit $status
