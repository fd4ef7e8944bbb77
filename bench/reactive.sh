#!/usr/bin/env bash
# Runs the Reactive benchmarks in release twice: as built by default, and with cross-module optimization.
# Usage: bench/reactive.sh   (from anywhere; exits non-zero if either run fails a checksum)
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== swift run -c release reactive-bench (scratch .build-bench) =="
swift run -c release --scratch-path .build-bench reactive-bench

echo
echo "== swift run -c release -Xswiftc -cross-module-optimization reactive-bench (scratch .build-bench-cmo) =="
swift run -c release -Xswiftc -cross-module-optimization --scratch-path .build-bench-cmo reactive-bench
