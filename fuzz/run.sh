#!/usr/bin/env bash
# Builds the RequestParser fuzz target with libFuzzer and AddressSanitizer and runs it.
# Usage: fuzz/run.sh [seconds]   (default 60). Exits non-zero on a crash, leak, hang or OOM.
# FUZZ_OPTIMIZATION=-Onone keeps the standard library's debug bounds checks on unsafe buffers (slower).
set -euo pipefail

seconds="${1:-60}"
# The RESP target (fuzz/RESPFuzz/run.sh) runs after this one on the other half of the budget.
resp_seconds=$((seconds / 2))
seconds=$((seconds - resp_seconds))
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
bin="$here/parser-fuzz.bin"
work="$here/corpus-work"

mkdir -p "$work/corpus" "$work/artifacts"
echo "building $bin"
swiftc -sanitize=fuzzer,address -parse-as-library "${FUZZ_OPTIMIZATION:--O}" -swift-version 6 \
    -enable-upcoming-feature ExistentialAny -enable-upcoming-feature MemberImportVisibility \
    -module-name ParserFuzz \
    "$root"/Sources/HTTPServer/Types/*.swift \
    "$root"/Sources/HTTPServer/Parser/*.swift \
    "$here"/ParserFuzz/*.swift \
    -o "$bin"

cp "$here"/corpus/* "$work/corpus/"
echo "fuzzing for ${seconds}s; crashes go to $work/artifacts/"
"$bin" "$work/corpus" \
    -dict="$here/http.dict" \
    -max_total_time="$seconds" \
    -timeout=5 \
    -rss_limit_mb=2048 \
    -print_final_stats=1 \
    -artifact_prefix="$work/artifacts/"

bash "$here/RESPFuzz/run.sh" "$resp_seconds"
