#!/usr/bin/env bash
# Builds the RESP fuzz target (parser and connection state machine) with libFuzzer and AddressSanitizer and runs it.
# Usage: fuzz/RESPFuzz/run.sh [seconds]   (default 60). Exits non-zero on a crash, leak, hang or OOM.
# FUZZ_OPTIMIZATION=-Onone keeps the standard library's debug bounds checks on unsafe buffers (slower).
set -euo pipefail

seconds="${1:-60}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
bin="$here/../resp-fuzz.bin"
work="$here/../corpus-work/resp"

mkdir -p "$work/corpus" "$work/artifacts"
echo "building $bin"
# shellcheck disable=SC2046
swiftc -sanitize=fuzzer,address -parse-as-library "${FUZZ_OPTIMIZATION:--O}" -swift-version 6 \
    -enable-upcoming-feature ExistentialAny -enable-upcoming-feature MemberImportVisibility \
    -module-name RESPFuzz \
    $(find "$root/Sources/RESP" -name '*.swift' | sort) \
    "$here"/main.swift \
    -o "$bin"

cp "$here"/corpus/* "$work/corpus/"
echo "fuzzing RESP for ${seconds}s; crashes go to $work/artifacts/"
"$bin" "$work/corpus" \
    -dict="$here/resp.dict" \
    -max_total_time="$seconds" \
    -timeout=5 \
    -rss_limit_mb=2048 \
    -print_final_stats=1 \
    -artifact_prefix="$work/artifacts/"
