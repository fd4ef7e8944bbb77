#!/usr/bin/env bash
# Runs the Reactive benchmarks in release twice: as built by default, and with cross-module optimization.
# Usage: bench/reactive.sh [--cpu] [case...]   (--cpu: time by the thread's CPU time, for a busy machine)
#          (cases: chain generic-chain subject subject-var fibonacci zip zip-mapped flatmap flatmap-optional shared-inners
#           plain; default all)
#        BUILD=plain|cmo|both (default both) picks the builds.
# Exits non-zero if a run fails a checksum.
# Builds from the bench package (bench/Package.swift), which depends on the root package by path: the
# library is measured as a user's package sees it, across the package boundary.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD="${BUILD:-both}"

if [ "$BUILD" != cmo ]; then
    echo "== swift run -c release --package-path bench reactive-bench $* (scratch .build-bench) =="
    swift run -c release --package-path bench --scratch-path .build-bench reactive-bench "$@"
fi

if [ "$BUILD" != plain ]; then
    [ "$BUILD" = cmo ] || echo
    echo "== swift run -c release -Xswiftc -cross-module-optimization --package-path bench reactive-bench $* (scratch .build-bench-cmo) =="
    swift run -c release -Xswiftc -cross-module-optimization --package-path bench --scratch-path .build-bench-cmo \
        reactive-bench "$@"
fi
