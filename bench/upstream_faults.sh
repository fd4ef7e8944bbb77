#!/usr/bin/env bash
# The upstream fault table of issue 11 against a release build of spout (see bench/upstream_faults.py).
#
#   bench/upstream_faults.sh                      # builds spout in release, runs the table once
#   RUNS=3 bench/upstream_faults.sh               # three runs in a row
#   BUILD=none SPOUT_BIN=path bench/upstream_faults.sh
#   SPOUT_BASE=path bench/upstream_faults.sh      # also run another binary (e.g. main's) after each run
#
# Output also goes to bench/.out/upstream-faults-<timestamp>.txt. Loopback only.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-1}
BUILD=${BUILD:-release}
if [[ "$BUILD" != none ]]; then
    swift build -c release --product spout >&2
    SPOUT_BIN=${SPOUT_BIN:-.build/release/spout}
fi
SPOUT_BIN=${SPOUT_BIN:?set SPOUT_BIN when BUILD=none}
mkdir -p bench/.out
out="bench/.out/upstream-faults-$(date -u +%Y%m%dT%H%M%SZ).txt"
{
    echo "# bench/upstream_faults.sh RUNS=$RUNS SPOUT_BIN=$SPOUT_BIN SPOUT_BASE=${SPOUT_BASE:-}"
    echo "# $(uptime)"
    for run in $(seq 1 "$RUNS"); do
        echo "## run $run"
        python3 bench/upstream_faults.py "$SPOUT_BIN" spout
        if [[ -n "${SPOUT_BASE:-}" ]]; then
            python3 bench/upstream_faults.py "$SPOUT_BASE" base
        fi
    done
    echo "# $(uptime)"
} 2>&1 | tee "$out"
echo "written to $out" >&2
